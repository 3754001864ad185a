//! What every console route shares: the query string, JSON answers and refusals.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde::Serialize;

pub(crate) type Reply = Response<Full<Bytes>>;

const JSON: &str = "application/json";

/// A parsed query string (`a=1&b=%2Fx`), values percent-decoded.
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    pub(crate) fn parse(query: Option<&str>) -> Query {
        let pairs = query.unwrap_or_default().split('&').filter(|p| !p.is_empty());
        Query(
            pairs
                .map(|pair| {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    (decode(k), decode(v))
                })
                .collect(),
        )
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A number in `1..=max`, `default` when absent; a refusal naming the key otherwise.
    pub(crate) fn limit(&self, key: &str, default: usize, max: usize) -> Result<usize, Refusal> {
        match self.get(key) {
            None | Some("") => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(Refusal::new(StatusCode::BAD_REQUEST, format!("{key} must be a number from 1 to {max}"))),
            },
        }
    }
}

/// Percent-decoding, `+` as a space (forms); bytes that are not UTF-8 become U+FFFD.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A request refused: its status and why, answered as [`error`] does.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub why: String,
}

impl Refusal {
    pub(crate) fn new(status: StatusCode, why: impl Into<String>) -> Refusal {
        Refusal { status, why: why.into() }
    }

    /// The answer; a 401 names the scheme that would do (RFC 9110 §11.6.1).
    pub(crate) fn reply(&self) -> Reply {
        let mut reply = error(self.status, &self.why);
        if self.status == StatusCode::UNAUTHORIZED {
            reply.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        reply
    }
}

/// `value` as JSON, not cached (the figures change every second).
pub(crate) fn json(value: &impl Serialize) -> Reply {
    match serde_json::to_vec(value) {
        Ok(body) => with_type(StatusCode::OK, JSON, body.into()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("cannot encode the answer: {e}")),
    }
}

/// `{"error": why}` with `status`.
pub(crate) fn error(status: StatusCode, why: &str) -> Reply {
    let body = serde_json::json!({ "error": why }).to_string();
    with_type(status, JSON, body.into())
}

pub(crate) fn with_type(status: StatusCode, content_type: &'static str, body: Bytes) -> Reply {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Node data for people and scripts: as text when it is UTF-8, and always as hex; at most
/// `max` bytes of it.
#[derive(Serialize)]
pub(crate) struct Data {
    pub size: usize,
    pub text: Option<String>,
    pub hex: String,
    pub truncated: bool,
}

impl Data {
    pub(crate) fn of(bytes: &[u8], max: usize) -> Data {
        let shown = &bytes[..bytes.len().min(max)];
        let text = match std::str::from_utf8(shown) {
            Ok(text) => Some(text.to_string()),
            // Cut in the middle of a character: the whole prefix before it is still text.
            Err(e) if e.error_len().is_none() => std::str::from_utf8(&shown[..e.valid_up_to()]).ok().map(String::from),
            Err(_) => None,
        };
        let hex = shown.iter().map(|b| format!("{b:02x}")).collect();
        Data { size: bytes.len(), text, hex, truncated: shown.len() < bytes.len() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_and_data_shows_as_text_and_hex() {
        let q = Query::parse(Some("path=%2Fa%2Fb%20c&x=1+2&bad=%zz&end=%4"));
        assert_eq!(q.get("path"), Some("/a/b c"));
        assert_eq!(q.get("x"), Some("1 2"));
        assert_eq!(q.get("bad"), Some("%zz"));
        assert_eq!(q.get("end"), Some("%4"));
        assert_eq!(q.get("none"), None);
        let d = Data::of("héllo".as_bytes(), 2);
        assert_eq!((d.size, d.text.as_deref(), d.hex.as_str(), d.truncated), (6, Some("h"), "68c3", true));
        assert_eq!(Data::of(&[0xff, 0], 10).text, None);
    }
}
