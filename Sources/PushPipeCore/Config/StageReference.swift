import Foundation

/// `docs/stages.md`: the reference of every stage type, route action and pipeline key, written
/// from the same descriptors that validate a file, so the documentation cannot drift from
/// what the daemon accepts. A test regenerates it and fails when the committed file differs.
public enum StageReference {
    public static let regenerateCommand = "swift run pushpipe stages --markdown > docs/stages.md"

    public static func markdown(registry: StageRegistry) -> String {
        let routeActions = registry.routeActions
        var lines = [
            "# Stage reference",
            "",
            "<!-- Generated from the stage registry by `\(regenerateCommand)`; do not edit by hand. -->",
            "",
            "Every key below is checked when a pipeline loads (`pushpipe validate`); `pushpipe schema` prints the same",
            "keys as a JSON Schema for editors. Durations take `250ms`, `30s`, `5m`, `2h`, `180d` or a number of seconds.",
            "",
            "## Pipeline file",
            "",
        ]
        lines += table(PipelineSchema.schema(registry: registry))
        for kind in StageKind.allCases {
            lines += ["", "## \(kind.rawValue.capitalized)s", ""]
            if kind == .source { lines += ["Every source also takes these keys:", ""] + table(StageRegistry.sourceCommon) + [""] }
            for descriptor in registry.all(kind: kind) {
                let origin = if case .plugin(let directory) = descriptor.origin { " (plugin in `\(directory)`)" } else { "" }
                lines += ["### `\(descriptor.type)`\(origin)", "", descriptor.summary, ""]
                lines += table(descriptor.schema)
                lines.append("")
            }
        }
        lines += ["## Route actions", "", "Every route also takes these keys:", ""]
        lines += table(RouteAction.commonSchema)
        for action in routeActions {
            let methods = action.defaultMethod.isEmpty ? "its own routes under `path`" : "default method \(action.defaultMethod)"
            lines += ["", "### `\(action.name)` (\(methods))", "", action.summary, ""]
            lines += table(action.schema)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func table(_ schema: Schema) -> [String] {
        guard !schema.keys.isEmpty else { return ["No keys."] }
        var rows = ["| key | type | default | description |", "|---|---|---|---|"]
        for key in schema.keys {
            rows.append(row(key, name: key.name))
            if case .object(let nested) = key.type {
                for inner in nested.keys { rows.append(row(inner, name: "\(key.name).\(inner.name)")) }
            }
        }
        return rows
    }

    static func row(_ key: SchemaKey, name: String) -> String {
        let requirement = key.required ? "**required**" : key.defaultValue.map { "`\(defaultText($0, type: key.type))`" } ?? "—"
        let type = typeName(key.type) + (key.rangeText.map { ", \($0)" } ?? "")
        return "| `\(name)` | \(escape(type)) | \(escape(requirement)) | \(escape(key.doc)) |"
    }

    /// Durations as people write them (`180d`, not `15552000`); an object's defaults are
    /// those of its keys, listed below it.
    static func defaultText(_ value: JSON, type: ValueType) -> String {
        switch (type, value) {
        case (.object, _): return "see below"
        case (.duration, .int(let seconds)): return duration(Double(seconds))
        case (.duration, .double(let seconds)): return duration(seconds)
        default: return value.compactText
        }
    }

    static func duration(_ seconds: Double) -> String {
        for (unit, size) in [("d", 86_400.0), ("h", 3600), ("m", 60), ("s", 1)]
        where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
            return "\(Int(seconds / size))\(unit)"
        }
        return seconds < 1 ? "\(Int((seconds * 1000).rounded()))ms" : "\(seconds)s"
    }

    static func typeName(_ type: ValueType) -> String {
        switch type {
        case .tagged(let tagged): "\(tagged.noun) object"
        case .list(.tagged(let tagged)): "list of \(tagged.noun) objects"
        default: type.name
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }
}
