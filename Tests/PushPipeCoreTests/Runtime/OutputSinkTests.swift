import Foundation
import PushPipeCore
import Synchronization
import Testing

@Suite struct OutputSinkTests {
    /// The sink's closure is not a `Mutex`'s value itself: each print would re-wrap it in
    /// thunks, so every line the stdout transport prints would make the next one deeper and slower.
    @Test func printingDoesNotGetDeeperWithEachLine() {
        let depths = Mutex<[Int]>([])
        let sink = OutputSink { _ in depths.withLock { $0.append(Thread.callStackReturnAddresses.count) } }
        for line in 0..<500 { sink.print("line \(line)") }
        let recorded = depths.withLock { $0 }
        #expect(recorded.count == 500)
        #expect(recorded.last == recorded.first, "stack depth \(recorded.first ?? 0) at the first line, \(recorded.last ?? 0) at the 500th")
    }
}
