//! The single integration test binary (ripgrep's tests/tests.rs). Each module says what it covers;
//! shared helpers live in `util`, in-process fakes in `fake`, real external programs in `peers`.

mod claude_smoke;
mod fake;
mod peers;
mod util;
