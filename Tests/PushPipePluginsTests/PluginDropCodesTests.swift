import Testing

@testable import PushPipePlugins

/// A plugin's drop codes become metric labels: checked for their
/// characters, and bounded in number, so a plugin naming a new code per event cannot grow the
/// metrics without end.
@Suite struct PluginDropCodesTests {
    @Test func codesAreCheckedAndBoundedInNumber() {
        let codes = PluginDropCodes()
        #expect(codes.code("quiet_hours") == "quiet_hours")
        #expect(codes.code("Quiet Hours") == "plugin")
        #expect(codes.code(nil) == "plugin")
        let named = (0..<100).map { codes.code(.string("code_\($0)")) }
        #expect(Set(named).subtracting(["plugin"]).count == PluginDropCodes.limit - 1, "one of the limit is quiet_hours")
        #expect(named.last == "plugin")
        #expect(codes.code("quiet_hours") == "quiet_hours", "a code already seen keeps its label")
    }
}
