// swift-tools-version:6.1
import PackageDescription

/// An app as `docs/ios.md` has it add pushpipe's payloads: `.ci/check-layers` checks that it
/// resolves no package but `PushPayloads`.
let package = Package(
    name: "AppConsumer",
    platforms: [.iOS(.v16), .macOS(.v13)],
    dependencies: [.package(path: "../../PushPayloads")],
    targets: [.target(name: "App", dependencies: [.product(name: "PushPayloads", package: "PushPayloads")])]
)
