import Foundation
import PushPipeCore
import PushPipeStages
import PushPipeTesting
import Testing

@Suite struct ConfigLoaderTests {
    func load(_ files: [String: String], environment: [String: String] = [:]) async throws -> ConfigLoader.Result {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var paths: [String] = []
        for (name, text) in files.sorted(by: { $0.key < $1.key }) { paths.append(try directory.write(name, text)) }
        let loader = ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: environment))
        return await loader.load(pipelineFiles: paths, pluginsDirectory: nil)
    }

    @Test func validPipelineLoadsWithDefaults() async throws {
        let result = try await load(["a.yaml": SamplePipeline.http("a")])
        #expect(result.diagnostics.isEmpty)
        let pipeline = try #require(result.pipelines.first)
        #expect(pipeline.delivery == .defaults)
        // The events route comes with its status route.
        #expect(pipeline.routes.map(\.route.path) == ["/register", "/events", "/events/:id"])
        #expect(pipeline.routes.map(\.route.method) == ["POST", "POST", "GET"])
    }

    /// A source's key names its queued events: its type unless it has a `key`, and two sources
    /// of one pipeline may not share one.
    @Test func sourcesAreKeyedByTheirKeyOrTypeAndTwoMayNotShareOne() async throws {
        let single = try #require(try await load(["a.yaml": SamplePipeline.http("a")]).pipelines.first)
        #expect(single.sources.map(\.key) == ["http.event"])
        #expect(single.sources.map(\.id) == ["sources[0]"])
        let twoSources = { (first: String, second: String) in
            SamplePipeline.http("a").replacingOccurrences(
                of: "  - {type: http.event, path: /events}",
                with: "  - {type: http.event, path: /events\(first)}\n  - {type: http.event, path: /other\(second)}"
            )
        }
        let clash = try await load(["a.yaml": twoSources("", "")])
        let diagnostic = try #require(clash.diagnostics.first { $0.keyPath == "sources[1].type" })
        #expect(diagnostic.message.contains("sources[0] has the key 'http.event' too"))
        #expect(diagnostic.location.line == 6)
        let keyed = try await load(["a.yaml": twoSources("", ", key: other-events")])
        #expect(keyed.diagnostics.isEmpty)
        #expect(keyed.pipelines.first?.sources.map(\.key) == ["http.event", "other-events"])
        let bad = try await load(["a.yaml": twoSources("", ", key: \"a b\"")])
        #expect(bad.diagnostics.contains { $0.keyPath == "sources[1].key" && $0.message.contains("is not a source key") })
    }

    @Test func duplicateRoutesAcrossFilesAreReportedWithBothPlaces() async throws {
        let result = try await load(["a.yaml": SamplePipeline.http("a"), "b.yaml": SamplePipeline.http("b", eventPath: "/b/events")])
        let duplicate = try #require(result.diagnostics.first { $0.code == .duplicateRoute })
        #expect(duplicate.location.file.hasSuffix("b.yaml"))
        #expect(duplicate.message.contains("pipeline 'a'"))
        #expect(duplicate.message.contains("a.yaml:3:5"))
    }

    /// Caps of one name count together, so they must keep their marks alike: one with shorter
    /// rules would prune what the other counts. Rules in another order are the same rules.
    @Test func capsOfOneNameWithOtherRulesAreRefusedWithBothPlaces() async throws {
        func capped(_ name: String, events: String, rules: String, capName: String = "people") -> String {
            SamplePipeline.http(name, routePath: "/\(name)/register", eventPath: events).replacingOccurrences(
                of: "renderer:",
                with: "filters:\n  - {type: settings.enabled}\n  - type: timing.cap\n    name: \(capName)\n    rules: \(rules)\nrenderer:"
            )
        }
        let day = "[{limit: 3, period: 1d}, {limit: 1, period: 10m}]"
        let same = try await load([
            "a.yaml": capped("a", events: "/a", rules: day),
            "b.yaml": capped("b", events: "/b", rules: "[{limit: 1, period: 600}, {limit: 3, period: 24h}]"),
        ])
        #expect(same.diagnostics.isEmpty, "\(same.diagnostics)")
        #expect(same.pipelines.count == 2)
        let other = try await load([
            "a.yaml": capped("a", events: "/a", rules: day), "b.yaml": capped("b", events: "/b", rules: "[{limit: 1, period: 10m}]"),
        ])
        let conflict = try #require(other.diagnostics.first { $0.code == .conflictingSharedState }, "\(other.diagnostics)")
        #expect(conflict.location.file.hasSuffix("b.yaml") && conflict.location.line == 10, "\(conflict)")
        #expect(conflict.keyPath == "filters[1].rules")
        #expect(conflict.message.contains("pipeline 'a'") && conflict.message.contains("a.yaml:10:"), "\(conflict.message)")
        #expect(conflict.expected == "1 per 600 s, 3 per 86400 s")
        #expect(other.pipelines.map(\.name) == ["a"], "the pipeline that disagrees is not loaded")
        let named = try await load([
            "a.yaml": capped("a", events: "/a", rules: day),
            "b.yaml": capped("b", events: "/b", rules: "[{limit: 1, period: 10m}]", capName: "other"),
        ])
        #expect(named.diagnostics.isEmpty, "caps of other names count apart")
    }

    @Test func parameterSegmentsCollideWithLiterals() async throws {
        let result = try await load([
            "a.yaml": SamplePipeline.http("a", routePath: "/users/:id"),
            "b.yaml": SamplePipeline.http("b", routePath: "/users/me", eventPath: "/b/events"),
        ])
        #expect(result.diagnostics.contains { $0.code == .duplicateRoute })
    }

    @Test func sameNameInTwoFilesIsAnError() async throws {
        let result = try await load([
            "a.yaml": SamplePipeline.http("same"), "b.yaml": SamplePipeline.http("same", routePath: "/b", eventPath: "/b/events"),
        ])
        #expect(result.diagnostics.contains { $0.code == .duplicatePipeline })
    }

    @Test func strictKeysNameTheAllowedKeys() async throws {
        let text = SamplePipeline.http("a").replacingOccurrences(of: "transport: {type: stdout}", with: "transport: {type: stdout, formatt: compact}")
        let result = try await load(["a.yaml": text])
        let diagnostic = try #require(result.diagnostics.first)
        #expect(diagnostic.code == .unknownKey)
        #expect(diagnostic.keyPath == "transport.formatt")
        #expect(diagnostic.expected == "one of: type, format")
    }

    @Test func interpolatedValuesAreTypedAfterInterpolation() async throws {
        let text = SamplePipeline.http("a") + "\ndelivery:\n  concurrency: \"${WORKERS:-4}\"\n  drain_timeout: ${DRAIN}"
        let result = try await load(["a.yaml": text], environment: ["DRAIN": "250ms"])
        #expect(result.diagnostics.isEmpty, "\(result.diagnostics)")
        #expect(result.pipelines.first?.delivery.concurrency == 4)
        #expect(result.pipelines.first?.delivery.drainTimeout == .milliseconds(250))
    }

    @Test func environmentValuesCannotInjectStructure() async throws {
        let result = try await load(
            ["a.yaml": SamplePipeline.http("a").replacingOccurrences(of: "/events", with: "\"${EVIL}\"")],
            environment: ["EVIL": "/x}\ntransport: {type: nope"]
        )
        #expect(result.diagnostics.isEmpty)
        #expect(
            result.pipelines.first?.routes.first { $0.route.method == "POST" && $0.route.path != "/register" }?.route.path
                == "/x}\ntransport: {type: nope"
        )
    }
}
