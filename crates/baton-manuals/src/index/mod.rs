//! The index of one manual: immutable segments (layout, builder, merge,
//! the `SIGBUS` guard), their store on disk (manifest, atomic writes), the
//! codec, and [`manual::ManualIndex`] (segments with deletions, read in
//! place). Knows analysis and the wire.

pub(crate) mod codec;
pub(crate) mod manual;
pub(crate) mod memory;
pub(crate) mod segment;
pub(crate) mod store;
