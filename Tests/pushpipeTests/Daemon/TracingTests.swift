import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// Traces over OTLP/HTTP, checked by an independent receiver that decodes the
/// protobuf export with OpenTelemetry's own definitions (PyPI `opentelemetry-proto`).
@Suite(.serialized) struct TracingTests {
    /// Decodes each export and prints one JSON line per span.
    static let receiver = #"""
        import json
        from http.server import BaseHTTPRequestHandler, HTTPServer
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
        def value(any):
            kind = any.WhichOneof("value")
            return getattr(any, kind) if kind else None
        class Receiver(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    service = {a.key: value(a.value) for a in resource.resource.attributes}.get("service.name")
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            print("span " + json.dumps({
                                "path": self.path, "content_type": self.headers["content-type"], "service": service,
                                "name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(), "kind": span.kind, "status": span.status.code,
                                "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
                                "attributes": {a.key: value(a.value) for a in span.attributes}}), flush=True)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            def log_message(self, *arguments):
                pass
        server = HTTPServer(("127.0.0.1", 0), Receiver)
        print("listening on %d" % server.server_address[1], flush=True)
        server.serve_forever()
        """#

    static func spans(_ receiver: DaemonProcess) -> [JSON] {
        receiver.standardOutput.compactMap { line in line.hasPrefix("span ") ? try? JSON.parse(String(line.dropFirst(5))) : nil }
    }

    static func hex(_ bytes: Int) -> String { (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    @Test(arguments: IdempotentAcceptTests.StoreKind.allCases)
    func anEventContinuesTheCallersTraceWithASpanPerStageAndAttempt(_ kind: IdempotentAcceptTests.StoreKind) async throws {
        guard let store = try await EventStatusTests.store(kind) else { return }
        guard await PythonPeer.hasModule("opentelemetry.proto", install: "opentelemetry-proto") else { return }
        let directory = try TemporaryDirectory("tracing-\(kind)")
        defer { directory.remove() }
        try directory.write("receiver.py", Self.receiver)
        try directory.write("pipelines/followed.yaml", EventStatusTests.pipeline)
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "TRACETEAM1", keyID: "TRACEKEY01")
        try await withCleanup(
            {
                try await DaemonProcess.run(arguments: [], directory: directory.path, launcher: ["/usr/bin/env", "python3", "receiver.py"]) {
                    receiver in
                    let line = try await receiver.waitForLine(containing: "listening on")
                    let port = try #require(Int(line.split(separator: " ").last ?? ""))
                    let environment = apnsEnvironment.merging(["OTEL_BSP_SCHEDULE_DELAY": "50"]) { _, new in new }
                    let arguments = [
                        "run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", store, "--plugins", "none",
                        "--log-format", "json", "--otlp-endpoint", "http://127.0.0.1:\(port)",
                    ]
                    try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
                        let client = HTTPTestClient(port: try await daemon.port())
                        #expect(
                            try await client.request("POST", "/register", json: ["user_id": "solo", "device_token": .string(EventStatusTests.good)])
                                .status == 200
                        )

                        // A caller whose trace is not sampled: the event is not traced either (parent-based sampling).
                        let unsampledTrace = Self.hex(16)
                        let quiet = try await client.request(
                            "POST",
                            "/events",
                            json: ["user": "solo", "text": "unsampled"],
                            headers: EventStatusTests.backend.merging(["traceparent": "00-\(unsampledTrace)-\(Self.hex(8))-00"]) { _, new in new }
                        )
                        let quietLocation = try #require(quiet.headers["location"])
                        let quietStatus = try #require(try await EventStatusTests.settledStatus(client, quietLocation))
                        #expect(quietStatus["state"] == "delivered" && quietStatus["trace_id"] == nil)

                        let trace = Self.hex(16)
                        let callerSpan = Self.hex(8)
                        let accepted = try await client.request(
                            "POST",
                            "/events",
                            json: ["user": "solo", "text": "traced"],
                            headers: EventStatusTests.backend.merging(["traceparent": "00-\(trace)-\(callerSpan)-01"]) { _, new in new }
                        )
                        #expect(accepted.status == 202)
                        let id = try #require(accepted.body?["id"]?.stringValue)
                        let location = try #require(accepted.headers["location"])
                        let status = try #require(try await EventStatusTests.settledStatus(client, location))
                        #expect(status["state"] == "delivered")
                        #expect(status["trace_id"]?.stringValue == trace, "the status record names the caller's trace")

                        try await receiver.waitForLine(containing: "\"name\": \"process followed\"")
                        let spans = Self.spans(receiver)
                        #expect(!spans.contains { $0["trace_id"]?.stringValue == unsampledTrace }, "an unsampled trace exports nothing")
                        let event = try #require(spans.first { $0["name"] == "process followed" })
                        #expect(event["trace_id"]?.stringValue == trace && event["parent"]?.stringValue == callerSpan, "a child of the caller's span")
                        #expect(event["path"] == "/v1/traces" && event["content_type"] == "application/x-protobuf" && event["service"] == "pushpipe")
                        #expect(event["attributes"]?["pushpipe.event.id"]?.stringValue == id)
                        #expect(event["attributes"]?["pushpipe.event.status"] == "delivered")
                        let eventSpan = try #require(event["span_id"]?.stringValue)
                        let children = spans.filter { $0["parent"]?.stringValue == eventSpan }
                        #expect(
                            Set(children.compactMap { $0["name"]?.stringValue }) == ["filter filters[0]", "render renderer", "send transport"],
                            "\(children)"
                        )
                        let send = try #require(children.first { $0["name"] == "send transport" })
                        #expect(send["attributes"]?["pushpipe.outcome"] == "delivered")
                        #expect(send["attributes"]?["pushpipe.token"]?.stringValue == String(EventStatusTests.good.prefix(8)) + "…")
                        #expect(send["attributes"]?["pushpipe.provider_id"]?.stringValue?.isEmpty == false, "APNs' apns-id")
                        #expect(!(receiver.standardOutput.joined().contains(EventStatusTests.good)), "no whole token leaves in a span")

                        // The JSON log lines of that event name its trace.
                        let logged = daemon.standardError.compactMap { try? JSON.parse($0) }.filter { $0["event"]?.stringValue == id }
                        #expect(!logged.isEmpty && logged.allSatisfy { $0["trace_id"]?.stringValue == trace }, "\(logged)")
                    }
                }
            },
            cleanup: apns.stop
        )
    }

    /// The standard sampler variables apply: `always_off` traces nothing, even a sampled caller's
    /// event, and its record names no trace. Off without a collector named: no tracing line.
    @Test func theStandardSamplerVariablesApplyAndTracingIsOffUnlessACollectorIsNamed() async throws {
        let directory = try TemporaryDirectory("sampler")
        defer { directory.remove() }
        try directory.write(
            "pipelines/sampled.yaml",
            """
            pipeline: sampled
            sources:
              - {type: http.event, path: /events, user_field: user}
            renderer: {type: json.template, payload: {text: "{{text}}"}}
            transport: {type: stdout}
            """
        )
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        for (environment, traced) in [
            (["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_TRACES_SAMPLER": "always_off"], true),
            ([:], false),
        ] {
            try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
                let client = HTTPTestClient(port: try await daemon.port())
                let accepted = try await client.request(
                    "POST",
                    "/events",
                    json: ["user": "u", "text": "quiet"],
                    headers: ["traceparent": "00-\(Self.hex(16))-\(Self.hex(8))-01"]
                )
                let location = try #require(accepted.headers["location"])
                let status = try await EventStatusTests.settledStatus(client, location, headers: [:])
                // Nobody is registered: the record says so, and names no trace.
                #expect(status?["state"] == "dropped" && status?["trace_id"] == nil, "\(String(describing: status))")
                #expect(daemon.standardError.contains { $0.contains("tracing: spans exported") } == traced)
                daemon.signal(SIGTERM)
                #expect(try await daemon.waitForExit() == 0)
            }
        }
    }

}
