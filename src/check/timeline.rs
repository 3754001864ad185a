//! Each recorded operation as a bar on the run's timeline ([`super::svg`]).

use super::locks::WriteOutcome;
use super::sessions::End;
use super::svg::{Span, Status};
use super::workers::Done;
use ward_linearizability::Outcome;

/// The bars of everything `done` recorded.
pub fn spans(done: &Done) -> Vec<Span> {
    let mut spans = Vec::new();
    for o in &done.ops {
        let status = match &o.outcome {
            None => Status::Unknown,
            Some((Outcome::BadVersion | Outcome::NoNode | Outcome::NodeExists, _)) => Status::Refused,
            Some(_) => Status::Ok,
        };
        spans.push(Span::new(o.process, o.invoked, o.outcome.as_ref().map(|(_, at)| *at), status));
    }
    for h in &done.holds {
        let status = match h.write.as_ref().map(|w| w.outcome) {
            Some(WriteOutcome::Unknown) => Status::Unknown,
            Some(WriteOutcome::Refused) | None => Status::Refused,
            Some(WriteOutcome::Accepted { .. }) => Status::Ok,
        };
        spans.push(Span::new(h.process, h.acquired, Some(h.released), status));
    }
    for e in &done.ephemerals {
        let (end, status) = match e.end {
            End::Closed { completed, .. } => (Some(completed), Status::Ok),
            End::Expired { gone: Some(gone), .. } => (Some(gone), Status::Ok),
            End::Expired { cut, gone: None } => (Some(cut), Status::Unknown),
            End::Unknown => (e.looks.last().map(|l| l.completed), Status::Unknown),
        };
        spans.push(Span::new(e.process, e.created.0, end, status));
    }
    for w in &done.watch_writes {
        let status = if w.done.is_some() { Status::Ok } else { Status::Unknown };
        spans.push(Span::new(w.process, w.invoked, w.done.map(|(at, _)| at), status));
    }
    for a in &done.armed {
        let (end, status) = match a.event {
            Some(event) => (event.at, Status::Ok),
            None => (a.completed, Status::Refused),
        };
        spans.push(Span::new(a.process, a.invoked, Some(end), status));
    }
    for c in &done.creates {
        let status = if c.created.is_some() { Status::Ok } else { Status::Unknown };
        spans.push(Span::new(c.process, c.invoked, c.created.as_ref().map(|(_, at)| *at), status));
    }
    spans
}
