import PushPayloads

/// An app's use of a payload type, so that the target has a reason to depend on the package.
public let route = OGSDeepLink.self
