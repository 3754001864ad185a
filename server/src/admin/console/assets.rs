//! The console's page, scripts and styles, embedded in the binary at build time
//! (server/assets/console/): nothing to install beside the server, and nothing fetched from
//! anywhere else. Plain HTML, JavaScript modules and CSS written by hand: there is no
//! build step, so what is in the repository is what is served.
//!
//! Every answer carries a Content-Security-Policy that allows this origin's own scripts and
//! styles alone, and no framing (the action buttons must not be clickjacked).

use super::http::{with_type, Reply};
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::StatusCode;

/// (URL path, content type, bytes).
const FILES: &[(&str, &str, &[u8])] = &[
    ("/", HTML, include_bytes!("../../../assets/console/index.html")),
    ("/assets/console.css", CSS, include_bytes!("../../../assets/console/console.css")),
    ("/assets/app.js", JS, include_bytes!("../../../assets/console/app.js")),
    ("/assets/api.js", JS, include_bytes!("../../../assets/console/api.js")),
    ("/assets/format.js", JS, include_bytes!("../../../assets/console/format.js")),
    ("/assets/chart.js", JS, include_bytes!("../../../assets/console/chart.js")),
    ("/assets/locks.js", JS, include_bytes!("../../../assets/console/locks.js")),
    ("/assets/tree.js", JS, include_bytes!("../../../assets/console/tree.js")),
    ("/assets/sessions.js", JS, include_bytes!("../../../assets/console/sessions.js")),
    ("/assets/ensemble.js", JS, include_bytes!("../../../assets/console/ensemble.js")),
    ("/assets/charts.js", JS, include_bytes!("../../../assets/console/charts.js")),
    ("/assets/favicon.svg", SVG, include_bytes!("../../../assets/console/favicon.svg")),
];

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const SVG: &str = "image/svg+xml";

const CSP: &str = "default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The asset at `path`, or `None` when there is none (the caller answers 404).
pub(crate) fn serve(path: &str) -> Option<Reply> {
    let path = if path == "/index.html" { "/" } else { path };
    let (_, content_type, bytes) = FILES.iter().find(|(p, _, _)| *p == path)?;
    let mut reply = with_type(StatusCode::OK, content_type, Bytes::from_static(bytes));
    let headers = reply.headers_mut();
    headers.insert(HeaderName::from_static("content-security-policy"), HeaderValue::from_static(CSP));
    headers.insert(HeaderName::from_static("x-content-type-options"), HeaderValue::from_static("nosniff"));
    headers.insert(HeaderName::from_static("x-frame-options"), HeaderValue::from_static("DENY"));
    headers.insert(HeaderName::from_static("referrer-policy"), HeaderValue::from_static("no-referrer"));
    Some(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module the page imports is served: a missing one would break the page only in
    /// a browser.
    #[test]
    fn every_imported_module_is_served() {
        for (path, _, bytes) in FILES {
            let text = std::str::from_utf8(bytes).expect("assets are UTF-8");
            for line in text.lines().filter(|l| l.trim_start().starts_with("import ")) {
                let Some(from) = line.split(['\'', '"']).nth(1) else { continue };
                let target = format!("/assets/{}", from.trim_start_matches("./"));
                assert!(FILES.iter().any(|(p, _, _)| *p == target), "{path} imports {from}, which is not served");
            }
        }
        assert!(serve("/").is_some() && serve("/index.html").is_some() && serve("/nope").is_none());
    }
}
