//! Durations in fault files: `"250us"`, `"5ms"`, `"1.5s"`, `"2m"`.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration written as a number and a unit (`ns`, `us`, `ms`, `s`, `m`, `h`), e.g. `"5ms"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct FaultDuration(pub Duration);

impl From<Duration> for FaultDuration {
    fn from(d: Duration) -> Self {
        Self(d)
    }
}

const UNITS: [(&str, f64); 7] = [
    ("ns", 1e-9),
    ("us", 1e-6),
    ("µs", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("m", 60.0),
    ("h", 3600.0),
];

/// Parses `"<number><unit>"`; the message says what is wrong.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let expected = "expected a number followed by ns, us, ms, s, m or h, e.g. \"5ms\"";
    let Some((_, scale)) = UNITS.iter().find(|(u, _)| *u == unit.trim()) else {
        return Err(format!("invalid duration {text:?}: {expected}"));
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: {expected}"))?;
    Duration::try_from_secs_f64(value * scale)
        .map_err(|_| format!("invalid duration {text:?}: out of range"))
}

impl fmt::Display for FaultDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.subsec_nanos() == 0 {
            write!(f, "{}s", d.as_secs())
        } else if d.as_nanos().is_multiple_of(1_000_000) {
            write!(f, "{}ms", d.as_millis())
        } else if d.as_nanos().is_multiple_of(1_000) {
            write!(f, "{}us", d.as_micros())
        } else {
            write!(f, "{}ns", d.as_nanos())
        }
    }
}

impl Serialize for FaultDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FaultDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse(&text)
            .map(FaultDuration)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_fractions() {
        assert_eq!(parse("5ms"), Ok(Duration::from_millis(5)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        for bad in ["5", "ms", "5 parsecs", "-1s", "1.2.3s", ""] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn displays_round_trip() {
        for d in [
            Duration::from_secs(2),
            Duration::from_millis(5),
            Duration::from_micros(250),
            Duration::from_nanos(7),
        ] {
            assert_eq!(parse(&FaultDuration(d).to_string()), Ok(d));
        }
    }
}
