import ArgumentParser

@main
struct BenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushpipe-bench",
        abstract: "pushpipe's benchmarks (bench/README.md). Local stand-ins only.",
        subcommands: [
            APNsBenchmark.self, OGSBenchmark.self, OGSStandInCommand.self, DelayedAPNsCommand.self, WebPushBenchmark.self, WebPushStandInCommand.self,
            SoakCommand.self, ChaosCommand.self, BroadcastBenchmark.self, ReplyLatencyBenchmark.self, TimingBenchmark.self,
        ]
    )
}
