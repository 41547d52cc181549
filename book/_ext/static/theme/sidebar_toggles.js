/* Every page: the sidebars' toggle buttons all work (toggles.js says why). */
import {whenReady} from "../lib/dom.js";
import {forwardToggles} from "./toggles.js";

whenReady(() => forwardToggles(document));
