"""`polishchuk2019` part B: parameter server (sync, async) vs ring all-reduce, measured on a real local cluster."""
