import PushPipeTesting
import Testing

/// The independent peers the daemon tests talk to are Python programs on PyPI's reference
/// libraries; without the library a test says what to install instead of failing obscurely.
enum PythonPeer {
    static func hasModule(_ module: String, install package: String) async -> Bool {
        let found =
            (try? await DaemonProcess.run(arguments: [], directory: "/", launcher: ["/usr/bin/env", "python3", "-c", "import \(module)"]) {
                try await $0.waitForExit()
            }) == 0
        if !found { Issue.record("this test's peer needs PyPI's \(package) (pip install \(package); .ci/run installs it)") }
        return found
    }
}
