import Foundation

/// This checkout, whose pipelines, plugins and docs the commands are tested on.
enum Repository {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}
