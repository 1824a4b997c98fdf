//! Times as the protocols write them, and steps of the wall clock. Pure: the instant is always a
//! parameter.

/// One reading of the two clocks: the wall clock (Unix ms, what the store's times are in, and what
/// NTP, the user or a resume from sleep may set) and the boot clock (ms since boot, sleep included,
/// which nobody sets: `CLOCK_BOOTTIME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    pub wall_ms: i64,
    pub boot_ms: i64,
}

/// A wall clock moved by less than this between two readings is not a step: readings a pass
/// apart differ by a few ms of scheduling, and a slewing NTP moves the clock by at most 0.5 ms/s.
pub const STEP_MIN_MS: i64 = 1_000;

impl Reading {
    /// The wall clock less the boot clock: what stays the same while time only runs.
    pub fn offset(&self) -> i64 {
        self.wall_ms.saturating_sub(self.boot_ms)
    }
}

/// How far the wall clock was set between two readings (later minus earlier: negative when it
/// went back), or `None` when it only ran. The boot clock runs through a laptop's sleep as the
/// wall clock does, so a resume is no step: the tasks it finds overdue are.
pub fn step(before: Reading, now: Reading) -> Option<i64> {
    step_of(before.offset(), now.offset())
}

/// [`step`] between two [`Reading::offset`]s.
pub fn step_of(before: i64, now: i64) -> Option<i64> {
    let by = now.saturating_sub(before);
    (by.abs() >= STEP_MIN_MS).then_some(by)
}

/// Unix milliseconds as RFC 3339 UTC (`2026-11-30T12:00:00.000Z`), the form A2A's and MCP's
/// timestamps take (a2a-lf's `DateTime<Utc>`, the Python SDK, Claude Code's MCP tasks).
pub fn rfc3339(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let ms = unix_ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Back an hour and on a day are steps of that size; a clock that ran with the boot clock,
    /// through a sleep too, or drifted a few ms, is not.
    #[test]
    fn a_step_is_the_wall_clock_moving_apart_from_the_boot_clock() {
        let at = |wall_ms, boot_ms| Reading { wall_ms, boot_ms };
        let before = at(1_800_000_000_000, 5_000);
        assert_eq!(step(before, at(1_800_000_000_500, 5_500)), None);
        // Eight hours asleep: both clocks ran.
        assert_eq!(step(before, at(1_800_028_800_000, 28_805_000)), None);
        assert_eq!(step(before, at(1_800_000_000_520, 5_500)), None, "drift");
        assert_eq!(
            step(before, at(1_799_996_400_500, 5_500)),
            Some(-3_600_000),
            "back an hour"
        );
        assert_eq!(
            step(before, at(1_800_086_400_500, 5_500)),
            Some(86_400_000),
            "on a day"
        );
    }

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_798_675_200_000), "2026-12-31T00:00:00.000Z");
    }
}
