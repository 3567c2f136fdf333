import Mustache

/// Arrays as templates see them. Besides iterating (`{{#games}}...{{/games}}`):
/// - `{{games.0.game_name}}`, `{{games.count}}`: elements by index, the number of elements;
/// - `{{#single(games)}}`, `{{#many(games)}}`, `{{#empty(games)}}`: sections for one, several, none;
/// - `{{#first(games)}}`, `{{#last(games)}}`, `{{count(games)}}`.
struct TemplateList: MustacheSequence, MustacheParent, MustacheTransformable {
    let elements: [Any]

    func makeIterator() -> IndexingIterator<[Any]> { elements.makeIterator() }

    func child(named name: String) -> Any? {
        if name == "count" { return elements.count }
        guard let index = Int(name), elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    func transform(_ name: String) -> Any? {
        switch name {
        case "single": elements.count == 1
        case "many": elements.count > 1
        case "empty": elements.isEmpty
        case "count": elements.count
        case "first": elements.first
        case "last": elements.last
        case "reversed": TemplateList(elements: elements.reversed())
        default: nil
        }
    }
}
