//! The admin routes: a request to its response. Nothing here reads the request body.

use super::console::{self, Console};
use super::exposition;
use crate::Server;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use std::net::SocketAddr;

/// What Prometheus asks for and gets: the OpenMetrics text format.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

pub(crate) async fn respond<B>(
    server: &Server,
    console: &Console,
    peer: SocketAddr,
    request: &Request<B>,
) -> Response<Full<Bytes>> {
    if let Some(answer) = console::respond(server, console, peer, request).await {
        return answer;
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "only GET and HEAD\n".into());
    }
    match request.uri().path() {
        "/metrics" => match exposition::render(server) {
            Ok(text) => reply(StatusCode::OK, OPENMETRICS, text),
            Err(error) => {
                tracing::warn!(%error, "cannot render /metrics");
                reply(StatusCode::INTERNAL_SERVER_ERROR, TEXT, "cannot render the metrics\n".into())
            }
        },
        "/healthz" => reply(StatusCode::OK, TEXT, "ok\n".into()),
        "/digest" => reply(StatusCode::OK, TEXT, server.core.read(crate::digest::digest).line()),
        "/readyz" => match server.replication.in_contact() {
            true => reply(StatusCode::OK, TEXT, "ready\n".into()),
            false => reply(StatusCode::SERVICE_UNAVAILABLE, TEXT, "not in contact with a leader\n".into()),
        },
        _ => reply(StatusCode::NOT_FOUND, TEXT, "not found: try /, /metrics, /healthz, /readyz or /digest\n".into()),
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
