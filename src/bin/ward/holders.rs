//! `ward holders PATH`: one line per contender, the holder first.

use ward_client::Contender;

/// `PATH token=N since=TIME session=ID data=TEXT`, with the data as lossy UTF-8 and control
/// characters escaped so that one contender stays one line.
pub fn line(contender: &Contender) -> String {
    let session = match contender.session {
        Some(session) => session.to_string(),
        None => "none".to_owned(),
    };
    let data: String = String::from_utf8_lossy(&contender.data)
        .chars()
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect();
    format!(
        "{} token={} since={} session={session} data={data}",
        contender.path,
        contender.token,
        utc(contender.since_ms)
    )
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn utc(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = civil_from_days(days);
    let secs = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ms_of_day % 1000
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_client::SessionId;

    #[test]
    fn formats_utc_times() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc(1_700_000_000_000), "2023-11-14T22:13:20.000Z");
        assert_eq!(utc(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn one_line_per_contender() {
        let contender = Contender {
            path: "/l/x__lock__0000000001".into(),
            data: b"a\nb\xff".to_vec(),
            token: 7,
            since_ms: 0,
            session: Some(SessionId(0x2a)),
        };
        assert_eq!(
            line(&contender),
            "/l/x__lock__0000000001 token=7 since=1970-01-01T00:00:00.000Z session=0x000000000000002a data=a\\nb\u{fffd}"
        );
    }
}
