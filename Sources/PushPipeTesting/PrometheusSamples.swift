/// A Prometheus text exposition as its samples: `name{labels}` → value (comments skipped).
public func prometheusSamples(_ exposition: String) -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
        samples[String(line[..<space])] = value
    }
    return samples
}
