// swift-tools-version:6.1
import PackageDescription

// libFuzzer targets (issue 36), a package of their own: they link libFuzzer's `main` and are
// only built by `bench/fuzz/run.sh` (`-sanitize=fuzzer,address`); the root package builds none.
let package = Package(
    name: "pushpipe-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "pushpipe", path: "../..")],
    targets: [
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "fuzz-json",
            dependencies: ["FuzzDriver", .product(name: "PushPipeCore", package: "pushpipe")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "fuzz-templates",
            dependencies: ["FuzzDriver", .product(name: "PushPipeCore", package: "pushpipe"), .product(name: "PushPipeStages", package: "pushpipe")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "fuzz-routes",
            dependencies: ["FuzzDriver", .product(name: "PushPipeCore", package: "pushpipe"), .product(name: "PushPipeSQLite", package: "pushpipe"),
                           .product(name: "PushPipeStages", package: "pushpipe")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "fuzz-providers",
            dependencies: ["FuzzDriver", .product(name: "PushPipeCore", package: "pushpipe"), .product(name: "PushPipeStages", package: "pushpipe")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "fuzz-events",
            dependencies: ["FuzzDriver", .product(name: "PushPipeCore", package: "pushpipe"), .product(name: "PushPipeStages", package: "pushpipe"),
                           .product(name: "PushPipeSQLite", package: "pushpipe")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "fuzz-yaml",
            dependencies: ["FuzzDriver", .product(name: "PushPipeCore", package: "pushpipe")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ]
)
