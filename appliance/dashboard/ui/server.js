// The owner's server page is rendered by the server; this module only
// brings the shared behaviour.
import "./common.js";
