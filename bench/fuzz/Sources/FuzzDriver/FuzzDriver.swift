/// SwiftPM links an executable's entry point as `<module>_main` (so tests can import it), where
/// libFuzzer brings its own `main`: each target's `<module>_main` hands control to libFuzzer's
/// driver through this.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ target: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt

public func runFuzzer(
    _ argc: CInt,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ target: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments, target)
}
