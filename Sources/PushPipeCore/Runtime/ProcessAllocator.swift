#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `malloc` this process runs on, said in the daemon's first lines so an operator can
/// tell a build with the `jemalloc` trait (or `LD_PRELOAD`) from one without.
///
/// It matters on Linux: under load glibc's arenas put threads to sleep on their locks (a
/// notification's values are allocated on one thread and freed on another), which costs the
/// APNs path a noticeable share of its CPU (measured in the history of bench/README.md).
public enum ProcessAllocator {
    public static let name: String = {
        // jemalloc exports `mallctl`, glibc does not. Looked up at run time: the trait links
        // jemalloc into the executable, not into this library.
        guard let process = dlopen(nil, RTLD_NOW) else { return systemName }
        defer { dlclose(process) }
        return dlsym(process, "mallctl") != nil ? "jemalloc" : systemName
    }()

    private static var systemName: String {
        #if os(Linux)
        "glibc"
        #else
        "system"
        #endif
    }
}
