//! The primitives behind the state that the application's tasks and the connection task
//! share: std's normally, loom's under `--cfg ward_loom`, so the loom models
//! (`loom_tests` modules, see README "Development") run the real types.
//!
//! Completions and wake-ups that the models must see are built here on those primitives
//! rather than taken from tokio (whose internals loom cannot see): [`oneshot`] carries a
//! request's outcome, a watch's event, a lock grant; [`Signal`] tells waiters that shared
//! state changed without losing a change that lands between their look and their wait.
//!
//! Under `ward_loom` these types only work inside `loom::model`: that build is for the
//! models alone, not for talking to a server.

pub(crate) mod oneshot;
mod signal;

pub(crate) use signal::Signal;

#[cfg(not(ward_loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

/// The maps the connection task keeps. Under loom their iteration order must be the same
/// in every execution (the model is replayed), so the hasher is fixed there.
#[cfg(not(ward_loom))]
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V>;
#[cfg(ward_loom)]
pub(crate) type HashMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>>;

#[cfg(ward_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

/// Locks `mutex`, ignoring poison: every critical section here leaves its state consistent
/// at each step, so a panic elsewhere must not take the client down with it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
