//! Access control, with ZooKeeper's model and rules (docs/security.md, G24).
//!
//! * [`identity`]: who a connection is ([`AuthId`]s: its address, digests it showed, its
//!   certificate's subject, the super user) and `AddAuth`.
//! * [`check`]: ZooKeeper's `checkACL` (does an ACL grant a permission to these ids?) and
//!   `fixupACL` (validating an ACL a client gives, expanding `auth`).
//! * [`table`]: the ACLs nodes point to, each list stored once however many nodes share it.
//! * [`access`]: which permission each operation needs on which node, checked in apply for
//!   writes and in the read's view for reads.
//!
//! Where the checks run matters in an ensemble: a write may arrive at one member and be
//! applied by all, so its permission is not judged by the receiving member against a state
//! that may be stale. The command carries the identities of the connection that sent it
//! ([`crate::command::CommandOp::As`]), and apply checks them against the tree it is about to
//! change, in log order: every member reaches the same verdict. Reads are checked where they
//! are answered, against the view they read.

pub(crate) mod access;
pub(crate) mod check;
pub mod identity;
pub(crate) mod table;

pub use identity::AuthId;
pub(crate) use identity::Identity;
