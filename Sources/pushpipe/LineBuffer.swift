import NIOCore

/// Lines of a byte stream, split at "\n" as bytes and decoded whole: a character the network
/// cut between two chunks stays whole, which decoding each chunk on its own would not keep.
struct LineBuffer {
    private var pending = ByteBuffer()

    mutating func append(_ chunk: ByteBuffer) {
        var chunk = chunk
        pending.writeBuffer(&chunk)
    }

    /// The next complete line, without its "\n"; nil until one is complete.
    mutating func nextLine() -> String? {
        guard let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            pending.discardReadBytes()
            return nil
        }
        let line = pending.readString(length: newline - pending.readerIndex) ?? ""
        pending.moveReaderIndex(forwardBy: 1)
        return line
    }
}
