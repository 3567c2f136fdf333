import Foundation
import PushPipeCore
import Yams

/// `pipelines/<name>_test.yaml`: input events and the exact requests they must produce.
public struct PipelineTestFile: Sendable {
    public var file: String
    public var pipelineFile: String
    public var given: JSON
    public var cases: [JSON]
    /// The variables the pipeline is loaded with (the caller's environment is never read).
    public var environment: [String: String]

    static let givenType: ValueType = .object(
        Schema([
            SchemaKey(
                "registrations",
                .list(
                    .object(
                        Schema([
                            .required("user", .string, "User id."),
                            SchemaKey("kind", .string, default: "device", "Token kind."),
                            .required("token", .string, "Token value."),
                            SchemaKey("scope", .string, default: "", "Token scope (activity id)."),
                        ])
                    )
                ),
                default: [],
                "Tokens in the store before the case runs."
            ),
            SchemaKey(
                "settings",
                .list(
                    .object(
                        Schema([
                            .required("user", .string, "User id."),
                            .required("key", .string, "Setting name."),
                            .required("value", .any, "Setting value."),
                        ])
                    )
                ),
                default: [],
                "User settings before the case runs."
            ),
            SchemaKey(
                "state",
                .list(
                    .object(
                        Schema([
                            .required("stage", .string, "Stage id, e.g. filters[0]."),
                            .required("key", .string, "State key."),
                            .required("value", .any, "State value."),
                        ])
                    )
                ),
                default: [],
                "Stage state (watermarks) before the case runs."
            ),
        ])
    )

    static let schema = Schema([
        SchemaKey("pipeline", .string, "Pipeline file, relative to this file; `<name>.yaml` next to `<name>_test.yaml` by default."),
        SchemaKey("env", .map(.string), default: [:], "Variables the pipeline is loaded with; the caller's environment is never used."),
        SchemaKey("given", givenType, default: ["registrations": [], "settings": [], "state": []], "Store contents for every case."),
        .required(
            "cases",
            .list(
                .object(
                    Schema([
                        .required("name", .string, "What the case shows."),
                        SchemaKey(
                            "given",
                            givenType,
                            default: ["registrations": [], "settings": [], "state": []],
                            "Extra store contents for this case."
                        ),
                        .required("event", EventInput.valueType, "The input event."),
                        SchemaKey(
                            "now",
                            .any,
                            "The clock the case runs at (ISO 8601 or UNIX seconds), for timing filters; the event's `time` when omitted, else the real time."
                        ),
                        .required(
                            "expect",
                            .object(
                                Schema(
                                    expectKeys + [
                                        SchemaKey(
                                            "then",
                                            .object(Schema(expectKeys)),
                                            "A held event when it comes back at its instant (the clock moved there): what must come out then."
                                        )
                                    ]
                                )
                            ),
                            "What must come out."
                        ),
                    ])
                )
            ),
            "Test cases."
        ),
    ])

    /// What a case expects of its event, and of a held event when it comes back (`then`).
    static let expectKeys: [SchemaKey] = [
        SchemaKey(
            "status",
            .oneOf(EventReport.Status.allCases.map(\.rawValue)),
            "Expected event status."
        ),
        SchemaKey("held_until", .string, "A held event's instant (ISO 8601), when it comes back."),
        SchemaKey("code", .string, "The code of the stage that dropped or held it (`setting_off`, `quiet_hours`)."),

        SchemaKey(
            "requests",
            .list(
                .object(
                    Schema([
                        SchemaKey("method", .string, "HTTP method."),
                        SchemaKey("url", .string, "Exact URL."),
                        SchemaKey("headers", .map(.string), "Headers that must be present with these values."),
                        SchemaKey("body", .any, "Exact JSON body (compared as parsed JSON)."),
                    ])
                )
            ),
            "Expected requests, in token order."
        ),
    ]

    public static func load(_ file: String, interpolation: EnvironmentInterpolation) -> Result<PipelineTestFile, ConfigurationError> {
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
            return .failure(
                ConfigurationError([Diagnostic(.unreadableFile, at: SourceLocation(file: file, line: 1, column: 1), keyPath: "", "cannot read file")])
            )
        }
        let root: Node
        switch ConfigLoader.compose(text, file: file) {
        case .failure(let diagnostic): return .failure(ConfigurationError([diagnostic]))
        case .success(let node): root = node
        }
        var validator = SchemaValidator(file: file, interpolation: interpolation)
        guard let json = validator.validate(root, as: .object(schema), at: "") else { return .failure(ConfigurationError(validator.diagnostics)) }
        let directory = (file as NSString).deletingLastPathComponent
        let defaultName =
            ((file as NSString).lastPathComponent as NSString).deletingPathExtension.replacingOccurrences(of: "_test", with: "") + ".yaml"
        let pipeline = json["pipeline"]?.stringValue ?? defaultName
        return .success(
            PipelineTestFile(
                file: file,
                pipelineFile: pipeline.hasPrefix("/") ? pipeline : (directory as NSString).appendingPathComponent(pipeline),
                given: json["given"] ?? [:],
                cases: json["cases"]?.arrayValue ?? [],
                environment: (json["env"]?.objectValue ?? [:]).compactMapValues(\.textValue)
            )
        )
    }

    /// `_test.yaml` files among the given paths (files or folders).
    public static func files(in paths: [String]) -> [String] {
        ConfigLoader.files(in: paths) { $0.hasSuffix("_test.yaml") }
    }
}
