import Synchronization

/// How a request's answer reaches its sender: one waiting task per request, or one per batch.
///
/// A batch's sender waits once for all its answers. A task switch per answer (resumed from
/// the event loop onto Swift's pool) would be a large share of what a notification costs.
enum HTTP2Completion: Sendable {
    case single(CheckedContinuation<HTTP2Answer, any Error>)
    case batch(HTTP2BatchAnswers, index: Int)

    func resume(returning response: HTTP2Answer) {
        resume(with: .success(response))
    }

    func resume(throwing error: any Error) {
        resume(with: .failure(error))
    }

    func resume(with result: Result<HTTP2Answer, any Error>) {
        switch self {
        case .single(let continuation): continuation.resume(with: result)
        case .batch(let answers, let index): answers.answer(index, with: result)
        }
    }
}

/// Collects a batch's answers and resumes its sender when the last one arrives.
final class HTTP2BatchAnswers: Sendable {
    private struct State {
        var results: [Result<HTTP2Answer, any Error>?]
        var remaining: Int
        var continuation: CheckedContinuation<[Result<HTTP2Answer, any Error>], Never>?
    }

    private let state: Mutex<State>

    init(count: Int, continuation: CheckedContinuation<[Result<HTTP2Answer, any Error>], Never>) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count, continuation: continuation))
    }

    func answer(_ index: Int, with result: Result<HTTP2Answer, any Error>) {
        let finished = state.withLock {
            state -> (CheckedContinuation<[Result<HTTP2Answer, any Error>], Never>, [Result<HTTP2Answer, any Error>])? in
            guard state.results[index] == nil else { return nil }
            state.results[index] = result
            state.remaining -= 1
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, state.results.map { $0! })
        }
        if let (continuation, results) = finished { continuation.resume(returning: results) }
    }
}
