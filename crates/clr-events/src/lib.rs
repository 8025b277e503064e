//! Typed payloads of the .NET runtime's well-known events.
