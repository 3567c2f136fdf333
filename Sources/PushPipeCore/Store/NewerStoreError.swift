/// A store migrated by a newer pushpipe: its schema may mean what this version does not know
/// (a column it would not fill, a table it would not prune), so this one does not start. Both
/// stores refuse such a database the same way.
public struct NewerStoreError: Error, CustomStringConvertible {
    public var unknownMigrations: [String]

    public init(unknownMigrations: [String]) {
        self.unknownMigrations = unknownMigrations
    }

    public var description: String {
        "the database was migrated by a newer pushpipe (migrations \(unknownMigrations.joined(separator: ", ")) are unknown to this version): "
            + "run that version or a later one against it"
    }
}
