//! Analysis: a manual file becomes sections (Markdown headings, JSON as
//! one unit) and each section its index terms, by field (body, heading,
//! ancestors' headings, path). Knows the wire's types, nothing above.

pub(crate) mod decode;
pub(crate) mod exceptions;
pub(crate) mod sections;
pub(crate) mod terms;
