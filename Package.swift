// swift-tools-version:6.1
import PackageDescription

/// jemalloc in the executables when the `jemalloc` trait is on (see the trait's description).
let jemallocWhenEnabled: [LinkerSetting] = [.linkedLibrary("jemalloc", .when(platforms: [.linux], traits: ["jemalloc"]))]

/// What the tests of the core, the host and the commands use besides pushpipe's modules: keys
/// and tokens made on the spot, child processes, a SQLite file read directly.
let testLibraries: [Target.Dependency] = [
    .product(name: "JWTKit", package: "jwt-kit"),
    .product(name: "Subprocess", package: "swift-subprocess"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    .product(name: "GRDB", package: "GRDB.swift"),
    .product(name: "Crypto", package: "swift-crypto"),
    .product(name: "_CryptoExtras", package: "swift-crypto"),
]

let package = Package(
    name: "pushpipe",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pushpipe", targets: ["pushpipe"]),
        .library(name: "PushPipeCore", targets: ["PushPipeCore"]),
        .library(name: "PushPipeStages", targets: ["PushPipeStages"]),
        .library(name: "PushPipeSQLite", targets: ["PushPipeSQLite"]),
        .library(name: "PushPipeTesting", targets: ["PushPipeTesting"]),
    ],
    traits: [
        .trait(
            name: "jemalloc",
            description: """
                Links jemalloc (Debian: libjemalloc-dev) into the executables on Linux. Under load \
                glibc's malloc puts threads to sleep on its arena locks, because a notification's \
                values are allocated on one thread and freed on another (docs/operations.md).
                """
        )
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.5.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/swift-extras/swift-extras-base64", from: "1.2.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // OTLP over HTTP only: the gRPC exporter's trait would build grpc-swift for nothing.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        // App-side payload types, a package of its own so that an app resolves none of the above.
        .package(path: "PushPayloads"),
    ],
    targets: [
        // Config, events, the stage protocols, the runtime and the store protocols. It imports no
        // server, database or exporter (`.ci/run` checks): a stage author's whole world.
        .target(
            name: "PushPipeCore",
            dependencies: [
                "Yams",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                // The tracing API, like swift-metrics' (an exporter is the composition root's choice).
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // base64url without Foundation's string replacements (Web Push keys, salts, JWTs).
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            ]
        ),
        .target(
            name: "PushPipeSQLite",
            dependencies: [
                "PushPipeCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the statements run once per notification (Statement+DirectBinding).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "PushPipePostgres",
            dependencies: [
                "PushPipeCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The app listener, the admin listener (Prometheus exporter, tap, status page).
        .target(
            name: "PushPipeHTTP",
            dependencies: [
                "PushPipeCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The request parts the request timeout watches (Hummingbird's own pipeline types).
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ]
        ),
        // Stages served by child processes (plugins.d).
        .target(
            name: "PushPipePlugins",
            dependencies: [
                "PushPipeCore",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "PushPipeStages",
            dependencies: [
                "PushPipeCore",
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // Stages that serve one app each (the OGS poller, the Sven reply folder), beside the generic ones.
        .target(
            name: "PushPipeApps",
            dependencies: [
                "PushPipeCore", "PushPipeStages",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]
        ),
        // Stand-ins (APNs, FCM, OGS, daemons) for the tests of pushpipe and of anyone's own
        // stages: it depends on no store, so a stage's tests build none.
        .target(
            name: "PushPipeTesting",
            dependencies: [
                "PushPipeCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]
        ),
        // Fresh databases and outages on the PostgreSQL test server.
        .target(
            name: "PushPipePostgresTesting",
            dependencies: [
                "PushPipeCore", "PushPipePostgres", "PushPipeTesting",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Which store a `--store` URL names, and opening it: the one module that knows both.
        .target(
            name: "PushPipeStores",
            dependencies: [
                "PushPipeCore", "PushPipeSQLite", "PushPipePostgres",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The CLI and the composition root: the only module that knows every other.
        .executableTarget(
            name: "pushpipe",
            dependencies: [
                "PushPipeCore", "PushPipeSQLite", "PushPipePostgres", "PushPipeStores", "PushPipeHTTP", "PushPipePlugins", "PushPipeStages",
                "PushPipeApps",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            linkerSettings: jemallocWhenEnabled
        ),
        .executableTarget(
            name: "pushpipe-bench",
            dependencies: [
                "PushPipeCore", "PushPipeSQLite", "PushPipePostgres", "PushPipeStages", "PushPipeApps", "PushPipeTesting", "PushPipePostgresTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "bench/Sources/pushpipe-bench",
            linkerSettings: jemallocWhenEnabled
        ),
        // The core in process: config and diagnostics, the runtime, routes, the store types, dry run,
        // egress and the clock, with stages and stores from the test helpers.
        .testTarget(
            name: "PushPipeCoreTests",
            dependencies: [
                "PushPipeCore", "PushPipeSQLite", "PushPipePostgres", "PushPipeStages", "PushPipeTesting", "PushPipePostgresTesting", "pushpipe",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ] + testLibraries,
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "PushPipeHTTPTests",
            dependencies: [
                "PushPipeCore", "PushPipeSQLite", "PushPipeHTTP", "PushPipeStages", "PushPipeTesting", "pushpipe",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
            ] + testLibraries
        ),
        .testTarget(
            name: "PushPipePluginsTests",
            dependencies: [
                "PushPipeCore", "PushPipePlugins", "PushPipeHTTP", "PushPipeStages", "PushPipeTesting", "pushpipe",
                .product(name: "Subprocess", package: "swift-subprocess"),
            ]
        ),
        // The commands, and every command the docs show.
        .testTarget(
            name: "pushpipeTests",
            dependencies: [
                .product(name: "PushPayloads", package: "PushPayloads"), "PushPipeCore", "PushPipeSQLite", "PushPipeStages", "PushPipeApps",
                "PushPipeStores",
                "PushPipeTesting",
                "PushPipePostgresTesting", "pushpipe",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ] + testLibraries
        ),
        // Both stores: the contract every store keeps (StoreContractTests), and each one's own.
        .testTarget(
            name: "PushPipeStoreTests",
            dependencies: [
                "PushPipeCore", "PushPipeSQLite", "PushPipePostgres", "PushPipeStores", "PushPipeHTTP", "PushPipeStages", "PushPipeTesting",
                "PushPipePostgresTesting",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "PushPipeStagesTests",
            dependencies: [
                "PushPipeCore", "PushPipeSQLite", "PushPipePostgres", "PushPipeStages", "PushPipeTesting", "PushPipePostgresTesting",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "PushPayloadsTests",
            dependencies: [
                .product(name: "PushPayloads", package: "PushPayloads"), "PushPipeCore", "PushPipeStages", "PushPipeApps", "PushPipePlugins",
                "pushpipe",
            ]
        ),
        // The app integrations: the OGS poller against its stand-in, the reply folder on real inotify.
        .testTarget(
            name: "PushPipeAppsTests",
            dependencies: [
                "PushPipeCore", "PushPipeSQLite", "PushPipeStages", "PushPipeApps", "PushPipeTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ]
)
