// swift-tools-version:6.1
import PackageDescription

/// What an app and its extensions link to read pushpipe's payloads: a package of its own, with
/// no dependency but Foundation (and ActivityKit where it exists), so adding it to an app
/// resolves none of the server's packages.
let package = Package(
    name: "PushPayloads",
    platforms: [.iOS(.v16), .macOS(.v13), .watchOS(.v9), .tvOS(.v16)],
    products: [
        .library(name: "PushPayloads", targets: ["PushPayloads"])
    ],
    targets: [
        .target(name: "PushPayloads")
    ]
)
