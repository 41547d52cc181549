/* The book's phone layout starts below this width of a figure's box (CSS px). */
export const PHONE_PX = 600;
export const narrow = (width) => width < PHONE_PX;
