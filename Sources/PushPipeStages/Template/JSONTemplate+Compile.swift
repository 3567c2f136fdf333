import PushPipeCore

extension Dictionary where Key == String, Value == JSON {
    /// Compiles a map of templates (a renderer's `vars`).
    func compile(keyPath: String) throws -> [String: JSONTemplate] {
        try reduce(into: [:]) { result, entry in
            result[entry.key] = try JSONTemplate(compiling: entry.value, keyPath: "\(keyPath).\(entry.key)")
        }
    }
}
