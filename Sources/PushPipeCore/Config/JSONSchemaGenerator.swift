/// Turns the schema the validator checks into a JSON Schema (draft 2020-12), so editors check
/// and complete pipeline files with exactly the keys, defaults and descriptions the daemon
/// uses: one source, never a second hand-written copy.
///
/// Files are validated before `${VAR}` interpolation, so every non-string value also accepts a
/// string holding a `${...}` reference (`sandbox: "${APNS_DEVELOPMENT:-false}"`).
public enum JSONSchemaGenerator {
    public static let draft = "https://json-schema.org/draft/2020-12/schema"

    public static func pipelineFileSchema(registry: StageRegistry) -> JSON {
        guard case .object(var root) = object(PipelineSchema.schema(registry: registry)) else { return [:] }
        root["$schema"] = .string(draft)
        root["$id"] = "https://pushpipe.dev/schema/pipeline.json"
        root["title"] = "pushpipe pipeline"
        root["description"] = "A pushpipe pipeline file: source → filters → renderer → transport, plus the app-facing routes."
        return .object(root)
    }

    static let interpolated: JSON = ["type": "string", "pattern": "\\$\\{"]

    /// `range` bounds a number's value; a duration written with a unit is checked by the daemon.
    public static func type(_ type: ValueType, range: ClosedRange<Double>? = nil) -> JSON {
        func bounded(_ type: String, minimum: Double? = nil) -> JSON {
            var schema: [String: JSON] = ["type": .string(type)]
            if let lower = range?.lowerBound ?? minimum, lower > -.infinity {
                schema["minimum"] = type == "integer" ? .int(Int64(lower)) : .double(lower)
            }
            if let upper = range?.upperBound, upper < .infinity { schema["maximum"] = type == "integer" ? .int(Int64(upper)) : .double(upper) }
            return .object(schema)
        }
        switch type {
        case .string: return ["type": "string"]
        case .integer: return ["anyOf": [bounded("integer"), interpolated]]
        case .number: return ["anyOf": [bounded("number"), interpolated]]
        case .boolean: return ["anyOf": [["type": "boolean"], interpolated]]
        case .duration:
            return [
                "anyOf": [
                    bounded("number", minimum: 0),
                    ["type": "string", "pattern": "^\\s*[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h|d)?\\s*$"], interpolated,
                ]
            ]
        case .oneOf(let values):
            return ["anyOf": [["enum": .array(values.map(JSON.string))], interpolated]]
        case .list(let element): return ["type": "array", "items": Self.type(element)]
        case .map(let value): return ["type": "object", "additionalProperties": Self.type(value)]
        case .object(let schema): return object(schema)
        case .tagged(let tagged): return self.tagged(tagged)
        case .any: return [:]
        }
    }

    static func object(_ schema: Schema, extraProperties: [String: JSON] = [:]) -> JSON {
        var properties = extraProperties
        for key in schema.keys { properties[key.name] = property(key) }
        var result: [String: JSON] = ["type": "object", "properties": .object(properties), "additionalProperties": false]
        let required = schema.keys.filter(\.required).map { JSON.string($0.name) }
        if !required.isEmpty { result["required"] = .array(required) }
        return .object(result)
    }

    static func property(_ key: SchemaKey) -> JSON {
        guard case .object(var property) = type(key.type, range: key.range) else { return [:] }
        if let allowed = key.allowed { property["anyOf"] = [["enum": .array(allowed.map(JSON.int))], interpolated] }
        property["description"] = .string(key.doc)
        if let value = key.defaultValue { property["default"] = value }
        return .object(property)
    }

    /// One `if`/`then` per variant, chosen by the discriminator (or by its absence, for the
    /// default variant), so an editor completes the keys of the type being written.
    static func tagged(_ tagged: Tagged) -> JSON {
        let names = tagged.variants.keys.sorted()
        let discriminator: JSON = ["description": .string("The \(tagged.noun)."), "enum": .array(names.map(JSON.string))]
        var branches: [JSON] = []
        for name in names {
            let variant = object(tagged.common + tagged.variants[name]!, extraProperties: [tagged.discriminator: discriminator])
            branches.append([
                "if": ["properties": [tagged.discriminator: ["const": .string(name)]], "required": [.string(tagged.discriminator)]],
                "then": variant,
            ])
            if name == tagged.defaultVariant {
                branches.append(["if": ["not": ["required": [.string(tagged.discriminator)]]], "then": variant])
            }
        }
        var result: [String: JSON] = ["type": "object", "properties": [tagged.discriminator: discriminator], "allOf": .array(branches)]
        if tagged.defaultVariant == nil { result["required"] = [.string(tagged.discriminator)] }
        return .object(result)
    }
}
