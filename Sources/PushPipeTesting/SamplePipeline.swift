/// The smallest pipeline that serves routes: a register route and an `http.event` source,
/// printing what it would send. For tests that need a daemon to run, not a flow.
public enum SamplePipeline {
    public static func http(_ name: String, routePath: String = "/register", eventPath: String = "/events") -> String {
        """
        pipeline: \(name)
        routes:
          - {action: register, path: \(routePath), user_field: user_id, token_kind: device, token_field: device_token}
        sources:
          - {type: http.event, path: \(eventPath)}
        renderer: {type: json.template, payload: {title: "{{title}}"}}
        transport: {type: stdout}
        """
    }
}
