//! `GET /api/backup`: a consistent backup of the running member's state, streamed as a
//! backup file (`ward_proto::backup`: a header, then the snapshot file as the data
//! directory holds it). The snapshot covers every write committed before the request
//! (docs/operations.md, "Backup and restore"). It needs the admin token: a backup holds
//! every node, those an ACL hides and the ACLs' digest ids included.

use super::console::actions;
use bytes::Bytes;
use futures_util::{stream, StreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use std::net::SocketAddr;
use tokio_util::io::ReaderStream;
use ward_proto::backup::BackupHeader;

use crate::replication::CopyError;
use crate::Server;

/// An admin answer: most are whole; a backup is streamed.
pub(crate) type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// How long one backup may take to send, in all: a client that reads too slowly loses it,
/// rather than holding the open snapshot file (and its disk space) for ever.
pub(crate) const SEND_TIME: std::time::Duration = std::time::Duration::from_secs(3600);

/// A whole answer as a [`Body`].
pub(crate) fn whole(response: Response<Full<Bytes>>) -> Response<Body> {
    response.map(|body| body.map_err(|never| match never {}).boxed_unsync())
}

pub(crate) async fn respond<B>(server: &Server, peer: SocketAddr, request: &Request<B>) -> Response<Body> {
    if request.method() != hyper::Method::GET {
        return whole(super::console::http::error(StatusCode::METHOD_NOT_ALLOWED, "a backup is a GET"));
    }
    let authorization = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    if let Err(refusal) = actions::authorize(server, authorization, peer, "backup") {
        return whole(refusal.reply());
    }
    tracing::info!(%peer, credential = "admin token", "backup: taking a snapshot that covers every committed write");
    let copy = match server.replication.snapshot_copy().await {
        Ok(copy) => copy,
        Err(error) => {
            tracing::warn!(%peer, %error, "backup refused");
            let status = match error {
                CopyError::InMemory => StatusCode::CONFLICT,
                CopyError::Behind(_) | CopyError::NotInTime { .. } => StatusCode::SERVICE_UNAVAILABLE,
                CopyError::Disk(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            return whole(super::console::http::error(status, &error.to_string()));
        }
    };
    let header = BackupHeader {
        ensemble: copy.ensemble.clone(),
        member: copy.member,
        zxid: copy.zxid,
        index: copy.index,
        term: copy.term,
        voters: copy.voters.clone(),
        taken_ms: crate::now_ms(),
        snapshot_bytes: copy.bytes,
    }
    .encode();
    let length = header.len() as u64 + copy.bytes;
    tracing::info!(%peer, zxid = copy.zxid, index = copy.index, bytes = length, "backup: sending");
    let head = stream::once(std::future::ready(Ok(Bytes::from(header))));
    let file = ReaderStream::with_capacity(tokio::fs::File::from_std(copy.file), 1 << 16);
    let body = StreamBody::new(head.chain(file).map(|chunk| chunk.map(Frame::data)));
    let mut response = Response::new(body.boxed_unsync());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert("x-ward-backup-zxid", HeaderValue::from(copy.zxid));
    response
}
