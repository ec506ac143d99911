/**
 * Phone numbers (docs/numbers.md): what the rest of numbers uses of them, a number's trunk
 * password context (inbound digest checks, a dial's trunk password) and its release (the
 * workspace purge). The route module and the numbers function's handlers take the rest
 * (phone-numbers.ts) themselves; the domain's store takes the item shapes from schemas.ts,
 * as this entry reaches that store.
 */
export { deletePhoneNumber, passwordContext } from './phone-numbers.ts';
