import Mustache

/// Strings as templates see them: Mustache's own transforms plus `truncate<N>`.
///
/// `{{truncate100(text)}}` keeps the first 100 characters and adds `...` when the text is
/// longer. Characters are Swift `Character`s (grapheme clusters), so an emoji or an accented
/// letter is never split, and the count is what a reader sees, not bytes.
struct TemplateText: MustacheTransformable, MustacheCustomRenderable, CustomStringConvertible {
    let value: String

    var description: String { value }
    var renderText: String { value }
    /// Empty text hides `{{#field}}` sections, as an empty string does in most Mustache engines.
    var isNull: Bool { value.isEmpty }

    func transform(_ name: String) -> Any? {
        if name.hasPrefix("truncate"), let limit = Int(name.dropFirst("truncate".count)), limit > 0 {
            return TemplateText(value: Self.truncate(value, to: limit))
        }
        return value.transform(name)
    }

    static func truncate(_ text: String, to limit: Int) -> String {
        text.count > limit ? String(text.prefix(limit)) + "..." : text
    }
}
