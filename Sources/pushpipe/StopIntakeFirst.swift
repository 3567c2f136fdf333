import PushPipeCore
import ServiceLifecycle

/// Listed last in the daemon's group, so it is the first service a stop reaches: the pipelines
/// stop taking events before the listeners wait for their requests. Otherwise a listener would
/// wait for handlers blocked in a full pipeline's `submit`, which only the pipelines' stop, later
/// in the group, would release: SIGTERM would hang while a transport is slow.
struct StopIntakeFirst: Service {
    let supervisor: PipelineSupervisor
    let notifier: SystemdNotifier

    func run() async throws {
        try? await gracefulShutdown()
        notifier.stopping()
        supervisor.beginStopping()
    }
}
