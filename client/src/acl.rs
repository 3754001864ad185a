//! Access control from the client's side: showing credentials, and nodes' ACLs
//! (docs/security.md). The types are ZooKeeper's: [`Acl`] entries of permission bits
//! ([`perms`](crate::perms)) and an identity; `Acl::open()` is what a plain create gives.
//!
//! ```no_run
//! use ward_client::{perms, Acl, Client, CreateMode};
//!
//! # async fn demo() -> Result<(), ward_client::Error> {
//! let alice = Client::builder("127.0.0.1:7181").auth("digest", "alice:secret").connect().await?;
//! // Everything to alice (the `auth` scheme names this client's identities), reading to all.
//! let acl = [Acl::new(perms::ALL, "auth", ""), Acl::new(perms::READ, "world", "anyone")];
//! alice.create_with_acl("/config", b"v1", CreateMode::Persistent, &acl).await?;
//! let (acl, stat) = alice.get_acl("/config").await?;
//! alice.set_acl("/config", &acl, Some(stat.aversion)).await?;
//! # Ok(())
//! # }
//! ```

use crate::client::{check_data, checked, unexpected, Client};
use crate::error::{Error, Result};
use ward_proto::{path, Acl, CreateMode, Credentials, Request, Response, Stat};

impl Client {
    /// Adds an identity to this client's connection (ZooKeeper's `addAuth`): for `digest`,
    /// `user:password`. It is shown again on every reconnect. Fails with
    /// [`Error::AuthFailed`] for a scheme the server cannot authenticate; a wrong password
    /// is not refused here (the server keeps no passwords): it is an identity no ACL names,
    /// and protected nodes answer [`Error::NoAuth`].
    pub async fn add_auth(&self, scheme: &str, credentials: impl AsRef<[u8]>) -> Result<()> {
        let request =
            Request::AddAuth { scheme: scheme.to_string(), credentials: Credentials(credentials.as_ref().to_vec()) };
        match self.call(request, None).await? {
            Response::AuthAdded => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// [`create`](Client::create) with the node's ACL.
    pub async fn create_with_acl(&self, path: &str, data: &[u8], mode: CreateMode, acl: &[Acl]) -> Result<String> {
        if mode.is_sequential() { path::validate_sequential_prefix(path) } else { path::validate(path) }
            .map_err(|e| Error::BadArguments(format!("{path:?}: {e}")))?;
        check_data(data)?;
        let request = Request::CreateWithAcl { path: path.to_string(), data: data.to_vec(), mode, acl: acl.to_vec() };
        match self.call(request, None).await? {
            Response::Created { path, .. } => Ok(path),
            other => Err(unexpected(other)),
        }
    }

    /// A node's ACL and stat (its `aversion` counts ACL changes). Needs READ or ADMIN on the
    /// node; without ADMIN, digest ids show as `user:x`.
    pub async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        match self.call(Request::GetAcl { path: checked(path)? }, None).await? {
            Response::Acl { acl, stat } => Ok((acl, stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Replaces a node's ACL; `version: Some(v)` fails with `BadVersion` unless its
    /// `aversion` is `v`. Needs ADMIN on the node. Returns the new stat.
    pub async fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        let request = Request::SetAcl { path: checked(path)?, acl: acl.to_vec(), version };
        match self.call(request, None).await? {
            Response::AclSet(stat) => Ok(stat),
            other => Err(unexpected(other)),
        }
    }
}
