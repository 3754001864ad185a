//! Everything ward prints goes through here: text or JSON, and writes that survive a closed
//! stdout or stderr.
//!
//! `println!` and `eprintln!` panic when the stream is gone (a closed pipe, `>&-`); Rust
//! ignores SIGPIPE, so such a write returns `EPIPE` instead of killing us. A stdout that
//! cannot be written to ends the command cleanly ([`Failure::OutputClosed`], exit 0): its
//! reader has gone away, as with `ward ls / | head -1`. Messages on a closed stderr are
//! dropped.

use crate::cli::Format;
use crate::commands::Failure;
use serde_json::{json, Map, Value};
use std::io::{ErrorKind, Write};

/// Standard output in the chosen format.
#[derive(Clone, Copy, Debug)]
pub struct Out {
    pub format: Format,
}

impl Out {
    pub fn json(self) -> bool {
        self.format == Format::Json
    }

    /// Writes `bytes` as they are, flushed (a watcher's reader sees each line at once).
    pub fn raw(self, bytes: &[u8]) -> Result<(), Failure> {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(bytes).and_then(|()| stdout.flush()).map_err(output_error)
    }

    /// One line of text.
    pub fn line(self, text: &str) -> Result<(), Failure> {
        self.raw(format!("{text}\n").as_bytes())
    }

    /// One JSON value on one line.
    pub fn value(self, value: &Value) -> Result<(), Failure> {
        self.line(&value.to_string())
    }
}

fn output_error(e: std::io::Error) -> Failure {
    const EBADF: i32 = 9;
    if e.kind() == ErrorKind::BrokenPipe || e.raw_os_error() == Some(EBADF) {
        Failure::OutputClosed
    } else {
        Failure::Output(e)
    }
}

/// `ward: MESSAGE` on stderr; dropped if stderr is gone.
pub fn warn(message: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr().lock(), "ward: {message}");
}

/// Node data in JSON: `{field}` is the data as a string and `{field}_encoding` says how:
/// `"utf-8"` when the bytes are valid UTF-8, else `"base64"` (standard alphabet, padded).
pub fn put_data(object: &mut Map<String, Value>, field: &str, data: &[u8]) {
    let (text, encoding) = match std::str::from_utf8(data) {
        Ok(text) => (text.to_owned(), "utf-8"),
        Err(_) => (base64(data), "base64"),
    };
    object.insert(field.to_owned(), json!(text));
    object.insert(format!("{field}_encoding"), json!(encoding));
}

/// Data on one line of text: lossy UTF-8 with control characters escaped.
pub fn one_line(data: &[u8]) -> String {
    String::from_utf8_lossy(data)
        .chars()
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect()
}

/// RFC 4648 base64 with padding.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let bytes = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = u32::from(bytes[0]) << 16 | u32::from(bytes[1]) << 8 | u32::from(bytes[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                text.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// Milliseconds since the Unix epoch as ISO 8601 UTC: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
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

    #[test]
    fn formats_utc_times() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc(1_700_000_000_000), "2023-11-14T22:13:20.000Z");
        assert_eq!(utc(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (plain, encoded) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("foobar", "Zm9vYmFy")]
        {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
        assert_eq!(base64(&[0xff, 0xfe]), "//4=");
    }

    #[test]
    fn data_is_text_when_it_is_utf8() {
        let mut object = Map::new();
        put_data(&mut object, "data", "héllo".as_bytes());
        put_data(&mut object, "raw", &[0xff]);
        assert_eq!(
            Value::Object(object),
            json!({"data": "héllo", "data_encoding": "utf-8", "raw": "/w==", "raw_encoding": "base64"})
        );
    }

    #[test]
    fn one_line_escapes_control_characters() {
        assert_eq!(one_line(b"a\nb\xff"), "a\\nb\u{fffd}");
    }
}
