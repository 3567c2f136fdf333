import Foundation
import Logging
import PushPipeTesting
import Testing

@testable import PushPipeCore

/// While the store fails, one operation at a time probes it. A probe that never comes back
/// must not keep the store "away" for good: every later operation would be refused long after
/// the database is back, and the daemon could not drain.
@Suite struct StoreAvailabilityTests {
    @Test func aProbeThatNeverComesBackIsGivenUpOn() async throws {
        let availability = StoreAvailability(name: "test", logger: Logger(label: "test"), probeLimit: .milliseconds(200))
        #expect(try availability.admit() == false, "an answering store is not probed")
        availability.failed(StoreTimeoutError(store: "test", waited: .seconds(1), what: "connection"), probe: false)
        #expect(try availability.admit() == true, "the first operation probes")
        #expect(throws: StoreUnavailableError.self, "the others are refused at once") { try availability.admit() }
        // The probe hangs. Past the limit, the next operation probes instead.
        // Generous: a loaded machine looks late. A refused operation throws and is looked at again.
        try await eventually("an operation to probe again", timeout: .seconds(60)) { try availability.admit() }
        availability.answered(probe: true)
        #expect(!availability.isFailing)
    }

    /// An operation let through before the store failed may still finish (its statement was
    /// running when the connections were cut): its answer does not end the outage, which
    /// would then be logged as over and begun again within a second. The probe's does.
    @Test func onlyTheProbeEndsAnOutage() throws {
        let availability = StoreAvailability(name: "test", logger: Logger(label: "test"))
        #expect(try availability.admit() == false, "let through while the store answers")
        availability.failed(StoreTimeoutError(store: "test", waited: .seconds(1), what: "connection"), probe: false)
        availability.answered(probe: false)
        #expect(availability.isFailing, "the earlier operation's answer says nothing of now")
        #expect(try availability.admit() == true)
        availability.answered(probe: true)
        #expect(!availability.isFailing)
    }

    /// A cancelled operation learnt nothing: the store is still failing, and the next one probes.
    @Test func aCancelledProbeNeitherEndsNorExtendsTheOutage() throws {
        let availability = StoreAvailability(name: "test", logger: Logger(label: "test"))
        availability.failed(StoreTimeoutError(store: "test", waited: .seconds(1), what: "connection"), probe: false)
        #expect(try availability.admit() == true)
        availability.abandoned(probe: true)
        #expect(availability.isFailing)
        #expect(try availability.admit() == true)
    }
}
