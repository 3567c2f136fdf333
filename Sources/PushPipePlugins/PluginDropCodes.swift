import PushPipeCore
import Synchronization

/// The codes a plugin filter named its drops with: each becomes a label of the drop metrics,
/// so a plugin may name a few dozen, checked for their characters and counted; any further
/// code, or one that is not lower-case letters, digits and `_` (at most 32), counts as `plugin`.
final class PluginDropCodes: Sendable {
    static let limit = 32
    private let seen = Mutex(Set<String>())

    func code(_ value: JSON?) -> String {
        guard let code = value?.stringValue, (1...32).contains(code.count),
            code.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
        else { return "plugin" }
        return seen.withLock { seen in
            if seen.contains(code) { return code }
            guard seen.count < Self.limit else { return "plugin" }
            seen.insert(code)
            return code
        }
    }
}
