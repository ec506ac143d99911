/* Parley chat widget: built from web/widget/widget.ts by scripts/build-widget.ts */
"use strict";(()=>{var z=`
:host { all: initial; position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; }
*, *::before, *::after { box-sizing: border-box; }
.launcher { display: flex; align-items: center; gap: 8px; border: 0; border-radius: 999px; padding: 12px 18px; background: #1f4fd1; color: #fff; font: inherit; font-weight: 600; cursor: pointer; box-shadow: 0 4px 14px rgba(0,0,0,.25); }
.launcher:hover { background: #173fab; }
.launcher:focus-visible, button:focus-visible, textarea:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
.panel { position: absolute; right: 0; bottom: 60px; width: min(360px, calc(100vw - 40px)); height: min(520px, calc(100vh - 100px)); display: flex; flex-direction: column; background: #fff; border: 1px solid #c9ced6; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); overflow: hidden; }
.panel[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; padding: 10px 14px; background: #1f4fd1; color: #fff; }
h2 { margin: 0; font-size: 16px; font-weight: 600; }
.close, .restart { border: 0; background: transparent; color: inherit; font: inherit; cursor: pointer; padding: 4px 8px; border-radius: 6px; }
.close { font-size: 20px; line-height: 1; }
ol { list-style: none; margin: 0; padding: 12px; flex: 1; overflow-y: auto; display: flex; flex-direction: column; gap: 8px; }
li { max-width: 85%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; word-wrap: break-word; }
li.agent { align-self: flex-start; background: #eef1f6; }
li.user { align-self: flex-end; background: #1f4fd1; color: #fff; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #e1e4ea; }
textarea { flex: 1; resize: none; min-height: 40px; max-height: 120px; padding: 8px 10px; border: 1px solid #8a93a3; border-radius: 8px; font: inherit; color: #1a1a1a; background: #fff; }
.send { border: 0; border-radius: 8px; padding: 0 14px; background: #1f4fd1; color: #fff; font: inherit; font-weight: 600; cursor: pointer; }
.send:disabled { background: #6b7280; cursor: default; }
.status { margin: 0; padding: 0 12px 8px; min-height: 1.4em; font-size: 13px; color: #4a5160; }
`;function A(u){let N=u.dataset.publicKey??"",L=u.dataset.agentId??"",_=new URL(u.src,location.href).origin,b=`parley-widget:${L}`,m=u.dataset.title??"Chat with us",x=document.createElement("div");x.setAttribute("data-parley-widget","");let y=x.attachShadow({mode:"open"});y.innerHTML=`
<style>${z}</style>
<section class="panel" id="panel" role="dialog" aria-modal="false" aria-labelledby="title" hidden>
  <header>
    <h2 id="title"></h2>
    <div>
      <button type="button" class="restart" id="restart">New chat</button>
      <button type="button" class="close" id="close" aria-label="Close chat">×</button>
    </div>
  </header>
  <ol id="log" role="log" aria-live="polite" aria-relevant="additions" aria-label="Messages"></ol>
  <p class="status" id="status" role="status"></p>
  <form id="form">
    <label class="sr-only" for="input">Your message</label>
    <textarea id="input" rows="1" maxlength="10000" placeholder="Type a message…" autocomplete="off"></textarea>
    <button type="submit" class="send" id="send">Send</button>
  </form>
</section>
<button type="button" class="launcher" id="launcher" aria-expanded="false" aria-controls="panel"></button>`;let s=e=>y.getElementById(e),p=s("panel"),r=s("launcher"),f=s("log"),$=s("status"),I=s("form"),i=s("input"),j=s("send");s("title").textContent=m,r.textContent=m;let n=O(),w=!1;function O(){try{let e=sessionStorage.getItem(b);return e?JSON.parse(e):void 0}catch{return}}function d(){try{n?sessionStorage.setItem(b,JSON.stringify(n)):sessionStorage.removeItem(b)}catch{}}function g(e){let t=document.createElement("li");t.className=e.role;let a=document.createElement("span");a.className="sr-only",a.textContent=e.role==="agent"?"Agent: ":"You: ",t.append(a,document.createTextNode(e.content)),f.append(t),f.scrollTop=f.scrollHeight}function o(e){$.textContent=e}function T(e){return(e??[]).filter(t=>(t.role==="agent"||t.role==="user")&&typeof t.content=="string"&&t.content!=="").map(t=>({role:t.role,content:t.content}))}async function k(e,t,a){let c=await fetch(_+e,{method:"POST",headers:{"content-type":"application/json",...a?{authorization:`Bearer ${N}`}:{}},body:JSON.stringify(t),credentials:"omit"}),l=await c.json().catch(()=>({}));return{status:c.status,json:l}}async function M(){o("Connecting…");let{status:e,json:t}=await k("/public/chat/start",{agent_id:L},!0);if(e!==201||!t.chat_id||!t.chat_secret)return o(t.message?`Chat unavailable: ${t.message}`:"Chat unavailable right now."),!1;n={chat_id:t.chat_id,chat_secret:t.chat_secret,messages:[],ended:t.chat_status==="ended",open:!0};for(let a of T(t.message_with_tool_calls))n.messages.push(a),g(a);return d(),o(""),!0}function h(e){w=e,j.disabled=e,i.setAttribute("aria-busy",String(e))}async function S(e){if(!(w||e.trim()==="")){h(!0);try{if((!n||n.ended)&&!await M())return;let t=n,a={role:"user",content:e};t.messages.push(a),g(a),i.value="",d(),o("Agent is typing…");let{status:c,json:l}=await k(`/public/chat/${encodeURIComponent(t.chat_id)}/message`,{content:e,chat_secret:t.chat_secret},!1);if(c===404){n=void 0,d(),o("This conversation has ended. Send a message to start a new one.");return}if(c!==200){o(l.message?`Not sent: ${l.message}`:"Not sent; try again.");return}for(let H of T(l.messages))t.messages.push(H),g(H);t.ended=l.chat_status==="ended",d(),o(t.ended?"The conversation has ended.":"")}catch{o("Network error; try again.")}finally{h(!1)}}}function C(e=!0){p.hidden=!1,r.setAttribute("aria-expanded","true"),r.setAttribute("aria-label",`Close ${m.toLowerCase()}`),n&&(n.open=!0,d()),e&&i.focus(),!n&&!w&&(h(!0),M().finally(()=>h(!1)))}function v(){p.hidden=!0,r.setAttribute("aria-expanded","false"),r.removeAttribute("aria-label"),n&&(n.open=!1,d()),r.focus()}r.addEventListener("click",()=>p.hidden?C():v()),s("close").addEventListener("click",v),s("restart").addEventListener("click",()=>{n&&!n.ended&&fetch(`${_}/public/chat/${encodeURIComponent(n.chat_id)}/end`,{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify({chat_secret:n.chat_secret}),credentials:"omit"}).catch(()=>{}),n=void 0,d(),f.replaceChildren(),o(""),i.focus()}),y.addEventListener("keydown",e=>{e.key==="Escape"&&!p.hidden&&(e.preventDefault(),v())}),i.addEventListener("keydown",e=>{e.key==="Enter"&&!e.shiftKey&&!e.isComposing&&(e.preventDefault(),S(i.value))}),I.addEventListener("submit",e=>{e.preventDefault(),S(i.value)});for(let e of n?.messages??[])g(e);document.body.append(x),n?.open&&C(!1)}var E=document.currentScript;E&&(document.body?A(E):document.addEventListener("DOMContentLoaded",()=>A(E),{once:!0}));})();
