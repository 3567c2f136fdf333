import Foundation
import PostgresNIO
import PushPipeCore

/// One pipeline's part of the PostgreSQL store (`Store.pipeline`): the store and the pipeline's name.
struct PostgresPipelineStore: GroupCommittedPipelineStore {
    let store: PostgresStore
    let pipeline: String

    var name: String { pipeline }
    var outcomes: GroupCommit<OutcomeWrite> { store.outcomes }
    var tokenCache: TokenCache { store.tokenCache }
    var work: any WorkQueue { PostgresWorkQueue(connections: store.connections, logger: store.logger, pipeline: pipeline) }
}

extension PostgresStore {
    public func pipeline(_ name: String) -> any PipelineStore { PostgresPipelineStore(store: self, pipeline: name) }
}
