/// Who holds a lease in a store: this process, by a name drawn at its start. A restarted daemon
/// is another owner, so what the dead one held lapses instead of passing to its successor
/// unseen; two daemons on one database never share a name.
public enum LeaseOwner {
    public static let thisProcess = RandomIdentifier.hex(nibbles: 16)
}
