import PushPipeCore

/// Which events a timing rule lets by (a security alert through quiet hours and caps): those
/// whose `bypass_field` holds one of `bypass_values`. Declared once for every rule that has it.
enum Bypass {
    static func keys(_ what: String) -> [SchemaKey] {
        [
            SchemaKey("bypass_field", .string, "A body field: an event whose value is one of `bypass_values` \(what)."),
            SchemaKey("bypass_values", .list(.any), default: [true], "Values of `bypass_field` that bypass the rule."),
        ]
    }

    static func applies(to event: Event, field: String?, values: [JSON]) -> Bool {
        guard let field, let value = event.body.value(at: field) else { return false }
        return values.contains(value)
    }
}
