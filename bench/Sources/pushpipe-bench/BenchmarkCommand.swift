import ArgumentParser

@main
struct BenchmarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushpipe-bench", abstract: "pushpipe's benchmarks (bench/README.md). Local stand-ins only.",
        subcommands: [APNsBenchmark.self, OGSBenchmark.self, OGSStandInCommand.self, SoakCommand.self, BroadcastBenchmark.self, ReplyLatencyBenchmark.self])
}
