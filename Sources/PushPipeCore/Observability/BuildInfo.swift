/// Which build this is, said where an operator looks during a rolling upgrade: `pushpipe
/// --version`, the daemon's first lines, `/metrics` (`pushpipe_build_info`) and the status page.
public enum BuildInfo {
    /// The release: raised in the commit that makes one (`docs/deploy.md`, "Upgrades").
    public static let version = "0.10.0"
}
