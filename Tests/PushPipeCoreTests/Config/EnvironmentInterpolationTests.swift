import PushPipeCore
import Testing

@Suite struct EnvironmentInterpolationTests {
    let interpolation = EnvironmentInterpolation(environment: ["HOST": "push.example", "EMPTY": "", "PORT": "8443"])

    @Test(arguments: [
        ("plain text", "plain text"),
        ("${HOST}", "push.example"),
        ("https://${HOST}:${PORT}/3/device", "https://push.example:8443/3/device"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${HOST:-fallback}", "push.example"),
        ("${MISSING:-}", ""),
        ("costs $$5", "costs $5"),
        ("$$${HOST}", "$push.example"),
        ("a lone $ stays", "a lone $ stays"),
        ("${EMPTY}", ""),
        ("${HOST:?needed}", "push.example"),
    ])
    func interpolates(_ input: String, _ output: String) {
        #expect(interpolation.interpolate(input) == .success(output))
    }

    @Test func undefinedVariableIsAnError() {
        #expect(interpolation.interpolate("key: ${APNS_KEY_PATH}") == .failure(.undefined(variable: "APNS_KEY_PATH", message: nil)))
    }

    @Test func requiredVariableCarriesItsMessage() {
        #expect(
            interpolation.interpolate("${APNS_KEY_ID:?the 10-character key id}")
                == .failure(.undefined(variable: "APNS_KEY_ID", message: "the 10-character key id"))
        )
    }

    @Test(arguments: ["${unterminated", "${BAD-NAME}", "${}", "${1ABC}"])
    func malformedReferencesAreErrors(_ input: String) {
        guard case .failure(.malformed) = interpolation.interpolate(input) else {
            Issue.record("\(input) should be malformed")
            return
        }
    }

    @Test func dryRunTurnsUndefinedIntoEmpty() {
        let lenient = EnvironmentInterpolation(environment: [:], allowsUndefined: true)
        #expect(lenient.interpolate("Bearer ${TOKEN}") == .success("Bearer "))
        #expect(lenient.interpolate("${TOKEN:?required}") == .success(""))
        #expect(lenient.interpolate("${TOKEN:-dev}") == .success("dev"))
    }
}
