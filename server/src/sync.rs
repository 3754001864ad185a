//! The primitives behind the state that connection tasks and apply share: std's normally,
//! loom's under `--cfg ward_loom`, so the loom models (`loom_tests` modules) check the real
//! [`Core`](crate::core::Core), [`WatchRegistry`](crate::watch::WatchRegistry),
//! [`Outbox`](crate::conn::outbox::Outbox) and [`SessionTracker`](crate::session::SessionTracker).
//!
//! Under `ward_loom` these types only work inside `loom::model`: that build is for the models
//! alone (`cargo test --lib loom_tests`), not for serving.

#[cfg(not(ward_loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Mutex, MutexGuard, RwLock,
};

#[cfg(ward_loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Mutex, MutexGuard, RwLock,
};

/// One waker, registered by a task that waits and woken by whoever gives it something to do
/// (a parked connection's outbox): futures' normally, loom's under `ward_loom`.
#[derive(Default)]
pub(crate) struct AtomicWaker(
    #[cfg(not(ward_loom))] futures_util::task::AtomicWaker,
    #[cfg(ward_loom)] loom::future::AtomicWaker,
);

impl AtomicWaker {
    pub(crate) fn register(&self, waker: &std::task::Waker) {
        #[cfg(not(ward_loom))]
        self.0.register(waker);
        #[cfg(ward_loom)]
        self.0.register_by_ref(waker);
    }

    pub(crate) fn wake(&self) {
        self.0.wake();
    }
}
