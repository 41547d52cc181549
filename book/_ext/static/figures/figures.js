/* The book's figures on this page: each figure's inline script draws through
 * attentionBook.newPlot (redraw.js), loaded as a module after plotly.js. */
import {book} from "../lib/namespace.js";
import {newPlot} from "./redraw.js";

book.newPlot = newPlot;
