import Foundation
import Mustache
import PushPipeCore

/// `GET /` on the admin listener: one server-rendered page of every pipeline, its stages,
/// totals, queue, last errors and latest deliveries (tokens masked). It refreshes itself; no
/// JavaScript, so it works in any browser and in `curl`.
public struct StatusPage: Sendable {
    let template: MustacheTemplate
    let startedAt = Date()
    let store: String
    let mode: RunMode

    public init(store: String, mode: RunMode) {
        self.store = store
        self.mode = mode
        // The template is part of the binary: a missing file must not take the page down.
        template = try! MustacheTemplate(string: Self.html)
    }

    public func render(supervisor: PipelineSupervisor, readinessProblems: [String: String], deadLetters: [EventRecord] = []) -> String {
        let formatter = ISO8601DateFormatter()
        let pipelines: [[String: Any]] = supervisor.runners.map { runner in
            let definition = runner.definition
            let activity = supervisor.telemetry.activity.snapshot(definition.name)
            let totals = activity.totals
            let stages: [[String: Any]] =
                definition.sources.map { ["id": $0.id, "type": $0.type, "kind": "source"] }
                + definition.filters.map { ["id": $0.id, "type": $0.type, "kind": "filter"] }
                + [
                    ["id": definition.renderer.id, "type": definition.renderer.type, "kind": "renderer"],
                    ["id": definition.transport.id, "type": definition.transport.type, "kind": "transport"],
                ]
            let connections = (definition.configuredTransport as? any ConnectionReporting)?.openConnections
            let letters = deadLetters.filter { $0.pipeline == definition.name }.prefix(5)
            return [
                "name": definition.name, "file": definition.file, "running": runner.isRunning,
                "stages": stages,
                "totals": [
                    ["label": "received", "value": totals.received], ["label": "dropped by filters", "value": totals.dropped],
                    ["label": "failed", "value": totals.failed], ["label": "rendered", "value": totals.rendered],
                    ["label": "delivered", "value": totals.delivered], ["label": "not delivered", "value": totals.notDelivered],
                    ["label": "retries", "value": totals.retries], ["label": "tokens pruned", "value": totals.tokensPruned],
                ],
                "queued": runner.queued, "inFlight": runner.processing,
                "connections": connections.map { "\($0)" } ?? "—",
                "hasDeliveries": !activity.deliveries.isEmpty,
                "hasDeadLetters": !letters.isEmpty,
                "deadLetters": letters.map { letter -> [String: Any] in
                    [
                        "time": formatter.string(from: Date(timeIntervalSince1970: letter.updatedAt)), "id": letter.eventID,
                        "user": letter.user ?? "—",
                        "reason": letter.reason ?? "",
                    ]
                },
                "problems": activity.problems.reversed().map { ["time": formatter.string(from: $0.time), "stage": $0.stage, "message": $0.message] },
                "deliveries": activity.deliveries.reversed().map { delivery -> [String: Any] in
                    [
                        "time": formatter.string(from: delivery.time), "user": delivery.user, "token": delivery.token,
                        "outcome": delivery.outcome.rawValue, "reason": delivery.reason ?? "",
                        "ok": delivery.outcome.isSuccess,
                    ]
                },
            ]
        }
        let context: [String: Any] = [
            "ready": readinessProblems.isEmpty,
            "problems": readinessProblems.sorted { $0.key < $1.key }.map { ["component": $0.key, "reason": $0.value] },
            "store": store, "mode": mode == .live ? "live" : "dry run", "version": BuildInfo.version,
            "started": formatter.string(from: startedAt), "now": formatter.string(from: Date()),
            "pipelines": pipelines, "noPipelines": pipelines.isEmpty,
        ]
        return template.render(context)
    }

    static let html = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5">
        <title>pushpipe status</title>
        <style>
        body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
        table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left}th{background:#f4f4f4}
        .ok{color:#176b2c}.bad{color:#a11}.muted{color:#777}code{font-size:.95em}
        </style></head><body>
        <h1>pushpipe <span class="muted" id="version">{{version}}</span></h1>
        <p id="readiness">{{#ready}}<strong class="ok">ready</strong>{{/ready}}{{^ready}}<strong class="bad">not ready</strong>{{/ready}}
         · {{mode}} · store <code>{{store}}</code> · started {{started}} · page of {{now}}</p>
        {{#problems}}<p class="bad">{{component}}: {{reason}}</p>{{/problems}}
        {{#noPipelines}}<p class="muted">No pipeline is running.</p>{{/noPipelines}}
        {{#pipelines}}
        <section class="pipeline" id="pipeline-{{name}}">
        <h2>{{name}} {{#running}}<span class="ok">running</span>{{/running}}{{^running}}<span class="bad">not running</span>{{/running}}</h2>
        <p class="muted"><code>{{file}}</code> · queued {{queued}} · in flight {{inFlight}} · provider connections {{connections}}</p>
        <table class="stages"><tr><th>stage</th><th>kind</th><th>type</th></tr>
        {{#stages}}<tr><td><code>{{id}}</code></td><td>{{kind}}</td><td>{{type}}</td></tr>{{/stages}}
        </table>
        <table class="totals"><tr>{{#totals}}<th>{{label}}</th>{{/totals}}</tr><tr>{{#totals}}<td>{{value}}</td>{{/totals}}</tr></table>
        <h3>Last errors</h3>
        {{^problems}}<p class="muted">None.</p>{{/problems}}
        {{#problems}}<p class="problem"><span class="muted">{{time}}</span> <code>{{stage}}</code> {{message}}</p>{{/problems}}
        <h3>Dead letters</h3>
        {{^deadLetters}}<p class="muted">None.</p>{{/deadLetters}}
        {{#hasDeadLetters}}<p class="muted">The newest; <code>pushpipe dead-letters list --pipeline {{name}}</code> lists them all.</p>
        <table class="dead-letters"><tr><th>time</th><th>event</th><th>user</th><th>reason</th></tr>{{/hasDeadLetters}}
        {{#deadLetters}}<tr><td>{{time}}</td><td><code>{{id}}</code></td><td>{{user}}</td><td>{{reason}}</td></tr>{{/deadLetters}}
        {{#hasDeadLetters}}</table>{{/hasDeadLetters}}
        <h3>Latest deliveries</h3>
        {{^deliveries}}<p class="muted">None yet.</p>{{/deliveries}}
        {{#hasDeliveries}}<table class="deliveries"><tr><th>time</th><th>user</th><th>token</th><th>outcome</th><th>reason</th></tr>{{/hasDeliveries}}
        {{#deliveries}}<tr><td>{{time}}</td><td>{{user}}</td><td><code>{{token}}</code></td><td class="{{#ok}}ok{{/ok}}{{^ok}}bad{{/ok}}">{{outcome}}</td><td>{{reason}}</td></tr>{{/deliveries}}
        {{#hasDeliveries}}</table>{{/hasDeliveries}}
        </section>
        {{/pipelines}}
        </body></html>
        """
}
