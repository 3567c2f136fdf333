import PushPipeCore
import Synchronization

/// A renderer that runs a test's hook before each broadcast page it renders (1 for the first),
/// then renders as the pipeline's own renderer does: the hook throws to fail that page (a
/// renderer error, a plugin restart) or waits there until the test cancels the broadcast.
final class PageHookRenderer: Renderer {
    private let inner: any Renderer
    private let hook: @Sendable (Int) async throws -> Void
    private let pages = Mutex(0)

    init(_ inner: any Renderer, hook: @escaping @Sendable (Int) async throws -> Void) {
        self.inner = inner
        self.hook = hook
    }

    func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
        let page = pages.withLock { pages in
            pages += 1
            return pages
        }
        try await hook(page)
        return try await inner.render(event, context: context)
    }

    /// `definition` with its renderer behind `hook`.
    static func around(_ definition: PipelineDefinition, hook: @escaping @Sendable (Int) async throws -> Void) -> PipelineDefinition {
        var definition = definition
        definition.renderer.stage = PageHookRenderer(definition.renderer.stage, hook: hook)
        return definition
    }
}

/// The error a test's renderer fails a page with.
struct ScriptedRendererError: Error, CustomStringConvertible {
    var page: Int
    var description: String { "scripted failure on page \(page)" }
}
